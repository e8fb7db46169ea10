/*
 * cmd_chat.c — `facet chat`: an interactive terminal chat (DESIGN.md, "Command line").
 * Each turn the whole conversation is rendered by the checkpoint's chat template (with
 * the generation prompt, as `facet run --messages` renders it), tokenized without added
 * special tokens, prefilled in a fresh session and answered greedily (or sampled) with
 * the reply streamed as it is generated. The options are `facet run`'s (run_opts.c).
 * Input: a line ending in a backslash continues on the next line; /clear, /system TEXT,
 * /exit (another line that is one /word is named as unknown, not sent); Ctrl-C during a
 * reply stops that reply (the SIGINT handler is the CLI's own),
 * Ctrl-D at the prompt exits.
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/run_opts.h"
#include "model/facts_gguf.h"
#include "facet_chat.h"
#include "facet_generate.h"
#include "util/str.h"
#include "util/utf8.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
    (void)sig;
    interrupted = 1;
}

/* Write n bytes of a reply to stdout and flush. Ctrl-C is installed without SA_RESTART,
 * so a write blocked on a terminal that is not reading (its buffer full) returns EINTR
 * when the user stops the reply: stdio then flags stdout as failed, and main would end
 * the chat with "writing standard output failed". Such a write is retried, as the
 * interruption is the user's stop, not an output error. */
static void reply_out(const char *s, size_t n) {
    while (n) {
        errno = 0;
        size_t w = fwrite(s, 1, n, stdout);
        s += w;
        n -= w;
        if (!n || errno != EINTR) break;
        clearerr(stdout);
    }
    for (;;) {
        errno = 0;
        if (fflush(stdout) == 0 || errno != EINTR) break;
        clearerr(stdout);
    }
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: facet chat [MODEL] [-n MAX_NEW] [--threads N] [--ctx N] [--weights FMT]\n"
            "                  [--temp T] [--top-k K] [--top-p P] [--seed S]\n"
            "\n"
            "An interactive chat in the terminal: each reply is generated from the whole\n"
            "conversation rendered by MODEL's chat template (as `facet run --messages`) and\n"
            "streamed as it comes. Greedy unless --temp > 0; the options are facet run's.\n"
            "  -n MAX_NEW         new tokens per reply at most (default 256)\n"
            "Input: a line ending in \\ continues on the next line. Commands: /clear forgets\n"
            "the conversation, /system TEXT sets the system prompt, /exit leaves; another\n"
            "line that is one /word (/help) is named as unknown, not sent. Ctrl-C\n"
            "stops the reply being generated; Ctrl-D at the prompt exits.\n"
            "docs/examples/stories260k-chat is the bundled model with a chat template (its\n"
            "replies are stories: it was never trained on chat); give an instruction-tuned one.\n"
            "example: facet chat docs/examples/stories260k-chat -n 32 --temp 0.7 --seed 1\n");
}

/* Read one message from stdin (lines ending in a backslash continue) into *msg.
 * Returns 1 with a message, 0 at end of input, -1 when Ctrl-C interrupted the read. */
static int read_message(facet_str *msg) {
    char *line = NULL;
    size_t cap = 0;
    facet_str_truncate(msg, 0);
    fputs(">>> ", stdout);
    fflush(stdout);
    for (;;) {
        errno = 0;
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) {
            int intr = errno == EINTR || interrupted;
            free(line);
            clearerr(stdin);
            if (intr) return -1;
            return msg->len ? 1 : 0;
        }
        if (n && line[n - 1] == '\n') line[--n] = '\0';
        if (n && line[n - 1] == '\\') {
            facet_str_append(msg, line, (size_t)n - 1);
            facet_str_putc(msg, '\n');
            fputs("... ", stdout);
            fflush(stdout);
            continue;
        }
        facet_str_append(msg, line, (size_t)n);
        free(line);
        return 1;
    }
}

typedef struct chat_state {
    const run_opts *o;
    facet_model *model;
    facet_model_info info;
    facet_tokenizer *tok;
    facet_chat_template *tpl;
    int n_ctx;
} chat_state;

/* Render `messages`, generate one reply (streamed to stdout, appended to *out). Returns 0
 * (also after Ctrl-C, which stops the reply) or an exit code. */
static int reply(chat_state *cs, json_t *messages, facet_str *out) {
    facet_error err = {0};
    const run_opts *o = cs->o;
    char *mjson = json_dumps(messages, JSON_COMPACT), *text = NULL;
    size_t len = 0, n = 0;
    int32_t *ids = NULL;
    float *logits = NULL;
    facet_session *sess = NULL;
    facet_generator *gen = NULL;
    int rc = 0;
    if (!mjson) return 1;
    if (facet_chat_render(cs->tpl, mjson, NULL, 1, NULL, &text, &len, &err) != FACET_OK) {
        rc = cli_chat_fail(&err, cs->tpl, "messages", NULL);
        goto out;
    }
    if (facet_tokenize(cs->tok, text, len, 0, &ids, &n, &err) != FACET_OK) {
        rc = cli_fail(&err);
        goto out;
    }
    if (n == 0 || n >= (size_t)cs->n_ctx) {
        fprintf(stderr, "facet: chat: the conversation has %zu tokens, the context holds %d: "
                        "/clear starts afresh\n", n, cs->n_ctx);
        goto out; /* not fatal: the user can /clear */
    }
    facet_session_options so = {1, cs->n_ctx, o->kv_cache};
    facet_generator_options go = {
        .sampling = &o->sampling, .n_vocab = cs->info.vocab_size, .tok = cs->tok,
        .stops = o->stops, .n_stops = o->n_stops, .eos_ids = cs->info.eos_token_ids,
        .n_eos = o->ignore_eos ? 0 : cs->info.n_eos, .max_tokens = o->max_new,
        .n_ctx = cs->n_ctx};
    size_t V = (size_t)cs->info.vocab_size;
    uint8_t *want = calloc(n, 1);
    int32_t *seqs = calloc(n, sizeof(int32_t));
    logits = malloc(sizeof(float) * V);
    if (!want || !seqs || !logits) {
        free(want);
        free(seqs);
        fprintf(stderr, "facet: out of memory\n");
        rc = 1;
        goto out;
    }
    want[n - 1] = 1;
    facet_batch b = {(int)n, ids, seqs, want};
    facet_status st = facet_session_create(cs->model, &so, &sess, &err);
    if (st == FACET_OK) {
        go.kv_type = facet_session_kv_type(sess);
        st = facet_generator_create(&go, ids, n, &gen, &err);
    }
    if (st == FACET_OK) st = facet_forward(sess, &b, logits, &err);
    free(want);
    free(seqs);
    if (st != FACET_OK) {
        rc = cli_fail(&err);
        goto out;
    }
    while (!interrupted && facet_generator_finish(gen) == FACET_FINISH_NONE) {
        facet_gen_step step;
        if (facet_generator_step(gen, logits, &step, &err) != FACET_OK) {
            rc = cli_fail_at("chat", &err);
            goto out;
        }
        if (step.len) {
            reply_out(step.text, step.len);
            facet_str_append(out, step.text, step.len);
        }
        if (step.finish != FACET_FINISH_NONE || interrupted) break;
        int32_t seq0 = 0;
        if (facet_decode(sess, 1, &seq0, &step.token, logits, &err) != FACET_OK) {
            rc = cli_fail(&err);
            goto out;
        }
    }
    if (interrupted) reply_out(" [stopped]", 10);
    reply_out("\n", 1);
out:
    facet_generator_free(gen);
    facet_session_free(sess);
    free(logits);
    free(ids);
    free(text);
    free(mjson);
    return rc;
}

static json_t *message(const char *role, const char *content, size_t len) {
    return json_pack("{s:s, s:s#}", "role", role, "content", content, len);
}

/* The chat loop over stdin; returns the exit code. */
static int chat_loop(chat_state *cs) {
    json_t *turns = json_array();
    facet_str system = {0}, msg = {0}, out = {0};
    int rc = 0, have_system = 0;
    for (;;) {
        interrupted = 0;
        int r = read_message(&msg);
        if (r < 0) {
            fputc('\n', stdout);
            continue;
        }
        if (r == 0) {
            fputc('\n', stdout);
            break;
        }
        const char *m = facet_str_cstr(&msg);
        if (!strcmp(m, "/exit")) break;
        if (!strcmp(m, "/clear")) {
            json_array_clear(turns);
            printf("(conversation cleared)\n");
            continue;
        }
        if (!strncmp(m, "/system", 7) && (m[7] == ' ' || m[7] == '\0')) {
            const char *t = m[7] ? m + 8 : "";
            facet_str_truncate(&system, 0);
            facet_str_appendz(&system, t);
            have_system = *t != '\0';
            printf(have_system ? "(system prompt set)\n" : "(system prompt removed)\n");
            continue;
        }
        if (!msg.len) continue;
        /* a line that is one /word is a command: one facet lacks (/help, /quit) is named,
         * not sent to the model as a message */
        size_t w = m[0] == '/' ? strspn(m + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") : 0;
        if (w && m[1 + w] == '\0') {
            printf("(unknown command %s: /clear, /system TEXT, /exit; Ctrl-D exits)\n", m);
            continue;
        }
        if (facet_utf8_validate(m, msg.len) != msg.len) {
            fprintf(stderr, "facet: chat: the message is not valid UTF-8\n");
            continue;
        }
        json_array_append_new(turns, message("user", m, msg.len));
        json_t *all = json_array();
        if (have_system)
            json_array_append_new(all, message("system", facet_str_cstr(&system), system.len));
        json_array_extend(all, turns);
        facet_str_truncate(&out, 0);
        rc = reply(cs, all, &out);
        json_decref(all);
        if (rc) break;
        json_array_append_new(turns, message("assistant", facet_str_cstr(&out), out.len));
    }
    json_decref(turns);
    facet_str_free(&system);
    facet_str_free(&msg);
    facet_str_free(&out);
    return rc;
}

int cmd_chat(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
    run_opts o;
    int rc = run_parse_args(argc, argv, &o);
    if (rc >= 0) return rc;
    if (o.prompt || o.prompt_file || o.prompt_ids || o.messages || o.tools || o.json ||
        o.dump_logits || o.json_schema || o.grammar) {
        fprintf(stderr, "facet: chat: the prompt comes from the terminal; -p, -f, --prompt-ids, "
                        "--messages, --tools, --json, --dump-logits, --json-schema and "
                        "--grammar are facet run's\n");
        return 1;
    }
    if (!o.model) o.model = cli_bundled_model();
    char model_buf[4096];
    if (!cli_model_folder(&o.model, model_buf, sizeof model_buf)) return 1;
    facet_error err = {0};
    chat_state cs;
    memset(&cs, 0, sizeof cs);
    cs.o = &o;
    /* the template and the tokenizer before the weights: a checkpoint without a chat
     * template is refused at once */
    if (facet_chat_template_load(o.model, &cs.tpl, &err) != FACET_OK) return cli_fail(&err);
    facet_facts facts;
    if (facet_facts_read_model(o.model, &facts, &err) != FACET_OK) {
        rc = cli_fail(&err);
        goto out;
    }
    if ((rc = cli_refuse_outside_table(o.model, &facts, "cpu"))) goto out;
    int max_pos = (int)facts.max_position_embeddings;
    cs.n_ctx = o.ctx ? o.ctx : max_pos;
    if (cs.n_ctx > max_pos) {
        fprintf(stderr, "facet: --ctx %d is larger than max_position_embeddings=%d\n", cs.n_ctx,
                max_pos);
        rc = 1;
        goto out;
    }
    facet_tokenizer *tok = NULL;
    if (!facet_tokenizer_present(o.model)) {
        if (facet_tokenizer_unread(o.model, &err) != FACET_OK) {
            rc = cli_fail_at("chat", &err);
            goto out;
        }
        fprintf(stderr, "facet: chat: %s has no tokenizer.json\n", o.model);
        rc = 1;
        goto out;
    }
    if (facet_tokenizer_load(o.model, &tok, &err) != FACET_OK) {
        rc = cli_fail(&err);
        goto out;
    }
    facet_load_options lo = {.n_threads = o.threads, .weights = o.weights,
                             .no_cache = o.no_cache, .tokenizer = tok};
    if (facet_model_load(o.model, &lo, &cs.model, &err) != FACET_OK) {
        rc = cli_fail(&err);
        goto out;
    }
    facet_model_get_info(cs.model, &cs.info);
    cs.tok = facet_model_tokenizer(cs.model);
    /* Ctrl-C stops a reply, not the program: no SA_RESTART, so a read at the prompt
     * returns EINTR too */
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    fprintf(stderr, "facet: chat with %s: /system TEXT, /clear, /exit; Ctrl-C stops a reply, "
                    "Ctrl-D exits\n", o.model);
    rc = chat_loop(&cs);
    sigaction(SIGINT, &old, NULL);
out:
    facet_model_free(cs.model);
    facet_chat_template_free(cs.tpl);
    return rc;
}
