/*
 * fuzz_template.c — libFuzzer target for the chat-template interpreter (src/chat):
 * lexer, parser and renderer together.
 *
 * The input is the template source. It is parsed and, when it parses, rendered twice
 * with a fixed conversation (messages with tool calls, tools, special tokens, a few
 * extra variables) under tight limits (20 nested macro calls, 20,000 loop iterations,
 * 256 KiB of output), so recursion, loops and output growth must end in FACET_E_LIMIT
 * errors, never a crash, a hang or a leak. The tool-call parsers also run over the
 * rendered text. Seeds (tests/fuzz/seeds/fuzz_template/) are the real chat templates
 * of tests/data/chat and small templates using each construct.
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja.h"
#include "facet_chat.h"

static const char VARS[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"},"
    " {\"role\": \"user\", \"content\": \"Weather in Paris? \\u00e9 <|im_end|>\"},"
    " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\": \"c1\", \"type\": \"function\","
    "  \"function\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3, \"x\": 1.5}}}]},"
    " {\"role\": \"tool\", \"content\": \"{\\\"temp\\\": 21}\"},"
    " {\"role\": \"assistant\", \"content\": \"It is 21C.\"}, {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"hi\"}]}],"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Get weather\","
    "  \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\","
    "  \"default\": 1}}, \"required\": [\"city\"]}}}],"
    " \"documents\": null, \"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\","
    " \"enable_thinking\": false, \"additional_special_tokens\": [\"<|im_start|>\", \"<|im_end|>\"]}";

static json_t *vars;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!vars) vars = json_loads(VARS, 0, NULL);
    jtemplate t;
    if (jinja_parse((const char *)data, size, &t, NULL) != FACET_OK) return 0;
    jlimits lim = {.max_depth = 20, .max_iterations = 20000, .max_output = 256 << 10};
    for (int pass = 0; pass < 2; pass++) {
        char *out = NULL;
        size_t n = 0;
        if (jinja_render(&t, pass ? NULL : vars, &lim, 1721952000, 0, &out, &n, NULL) == FACET_OK) {
            for (int f = FACET_TOOLCALL_HERMES; f <= FACET_TOOLCALL_HARMONY; f++) {
                facet_toolcall_result r;
                if (facet_toolcall_parse((facet_toolcall_format)f, out, n, &r, NULL) == FACET_OK) {
                    free(facet_toolcall_result_json(&r));
                    facet_toolcall_result_free(&r);
                }
            }
        }
        free(out);
    }
    jinja_template_free(&t);
    return 0;
}
