/* table.c — placeholder profile list (the full table lands next). */
#include "model/table.h"

#include <string.h>

int facet_table_has_profile(const char *model_type) {
    static const char *const known[] = {"llama", "mistral", "qwen2", "qwen3"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(known[i], model_type)) return 1;
    return 0;
}
