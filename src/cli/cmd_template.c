/*
 * cmd_template.c — `facet template MODEL --messages FILE.json [--tools FILE.json]
 * [--add-generation-prompt] [--var NAME=JSON]...`: prints exactly the rendered chat
 * prompt (no added newline). MODEL is a folder with tokenizer_config.json and/or
 * chat_template.jinja / chat_template.json; no tokenizer.json is needed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "facet_chat.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

#define MAX_INPUT_BYTES (256u << 20)

static int usage(void) {
    fprintf(stderr, "usage: facet template MODEL --messages FILE.json [--tools FILE.json] "
                    "[--add-generation-prompt] [--var NAME=JSON]...\n");
    return 1;
}

int cmd_template(int argc, char **argv) {
    const char *model = NULL, *msgs_path = NULL, *tools_path = NULL;
    int add_gen = 0;
    facet_error err = {0};
    json_t *vars = json_object();
    char *msgs = NULL, *tools = NULL, *vars_text = NULL, *out = NULL;
    facet_chat_template *tpl = NULL;
    int rc = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        static const char *const value_opts[] = {"--messages", "--tools", "--var", NULL};
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: facet template MODEL --messages FILE.json [--tools FILE.json] "
                   "[--add-generation-prompt] [--var NAME=JSON]...\n"
                   "Renders the model's chat template (tokenizer_config.json or\n"
                   "chat_template.jinja) over the messages, as transformers'\n"
                   "apply_chat_template(tokenize=False) does, and prints the text.\n"
                   "example: facet template tests/data/chat/tokenizers__qwen2.5 --messages "
                   "docs/examples/messages.json --add-generation-prompt\n");
            rc = 0;
            goto out;
        }
        if (cli_missing_value("template", a, i + 1 == argc, value_opts)) goto out;
        if (!strcmp(a, "--messages") && i + 1 < argc) msgs_path = argv[++i];
        else if (!strcmp(a, "--tools") && i + 1 < argc) tools_path = argv[++i];
        else if (!strcmp(a, "--add-generation-prompt")) add_gen = 1;
        else if (!strcmp(a, "--var") && i + 1 < argc) {
            const char *spec = argv[++i], *eq = strchr(spec, '=');
            if (!eq || eq == spec) {
                fprintf(stderr, "facet: --var %s: expected NAME=JSON\n", spec);
                goto out;
            }
            json_t *v;
            char what[300];
            snprintf(what, sizeof what, "--var %.*s", (int)(eq - spec) > 200 ? 200 : (int)(eq - spec), spec);
            if (facet_json_parse_exact(eq + 1, strlen(eq + 1), what, &v, &err)) {
                rc = cli_fail(&err);
                goto out;
            }
            json_object_setn_new(vars, spec, (size_t)(eq - spec), v);
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "facet: template: unknown option %s\n", a);
            rc = usage();
            goto out;
        } else if (!model) model = a;
        else {
            fprintf(stderr, "facet: template: unexpected argument %s\n", a);
            rc = usage();
            goto out;
        }
    }
    if (!model || !msgs_path) {
        rc = usage();
        goto out;
    }
    char model_buf[4096];
    if (!cli_text_folder(&model, model_buf, sizeof model_buf)) {
        rc = 1;
        goto out;
    }
    size_t len;
    if (cli_read_input("--messages", msgs_path, MAX_INPUT_BYTES, &msgs, &len, &err) ||
        (tools_path && cli_read_input("--tools", tools_path, MAX_INPUT_BYTES, &tools, &len, &err)) ||
        facet_chat_template_load(model, &tpl, &err)) {
        rc = cli_fail(&err);
        goto out;
    }
    vars_text = facet_json_dumps_exact(vars); /* --var values may hold big integers */
    size_t out_len;
    if (facet_chat_render(tpl, msgs, tools, add_gen, vars_text, &out, &out_len, &err)) {
        rc = cli_chat_fail(&err, tpl, msgs_path, tools_path);
        goto out;
    }
    if (fwrite(out, 1, out_len, stdout) != out_len || fflush(stdout)) {
        fprintf(stderr, "facet: template: writing stdout failed\n");
        goto out;
    }
    rc = 0;
out:
    json_decref(vars);
    free(msgs);
    free(tools);
    free(vars_text);
    free(out);
    facet_chat_template_free(tpl);
    return rc;
}
