/*
 * tokenizer_bench.c — tokenizer.json load time and single-thread encode throughput.
 *
 * Usage: tokenizer_bench DIR... (each DIR holds a tokenizer.json)
 * For each folder: load time (best of 3, cold cache excluded by running twice), then
 * encode of a 1 MiB mixed English / code / CJK text generated deterministically here
 * (fixed LCG seed), with add_special_tokens=1, best of 3 runs, reported in MB/s
 * (10^6 bytes per second). Build: bench/tokenizer_bench.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "facet_tokenizer.h"

/* Thread CPU time: the machine this runs on is shared, and wall time there measures the
 * queue for a core as much as the code. Wall time is reported beside it. */
static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double wall_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static unsigned next(unsigned n) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((rng >> 33) % n);
}

/* 1 MiB: about 60% English prose, 25% code, 15% CJK by bytes. */
static char *make_text(size_t size) {
    static const char *words[] = {"the", "model", "of", "language", "a", "token", "is", "and", "to", "in",
                                  "that", "with", "for", "Hello", "world", "It", "was", "quickly", "running",
                                  "inference", "engine", "don't", "they're", "1984", "3.14159", "New", "York",
                                  "café", "naïve", "weights", "matrix", "attention", "cache", "memory"};
    static const char *code[] = {"int main(void) {\n", "    return 0;\n}\n", "for (size_t i = 0; i < n; i++)",
                                 " x[i] += y[i] * alpha;\n", "def forward(self, x):\n", "        return self.proj(x)\n",
                                 "if (err != NULL) { goto fail; }\n", "    // TODO: handle the edge case\n",
                                 "\tconst char *s = \"text\";\n", "print(f\"{value:.3f}\")\n"};
    static const char *cjk[] = {"日本語", "のテキスト", "中文", "字符", "한국어", "문장", "東京", "大阪", "模型", "推理"};
    char *t = malloc(size + 64);
    size_t n = 0;
    while (n < size) {
        unsigned r = next(100);
        const char *s;
        char buf[64];
        if (r < 60) {
            s = words[next(sizeof words / sizeof *words)];
            snprintf(buf, sizeof buf, "%s%s", s, next(12) == 0 ? ". " : next(10) == 0 ? ", " : " ");
            s = buf;
        } else if (r < 85) {
            s = code[next(sizeof code / sizeof *code)];
        } else {
            s = cjk[next(sizeof cjk / sizeof *cjk)];
        }
        size_t l = strlen(s);
        if (n + l > size) break;
        memcpy(t + n, s, l);
        n += l;
    }
    while (n < size) t[n++] = ' ';
    t[n] = '\0';
    return t;
}

int main(int argc, char **argv) {
    size_t size = 1 << 20;
    char *text = make_text(size);
    printf("| tokenizer | load ms CPU (wall) | tokens | encode MB/s CPU (wall), first run | encode MB/s CPU (wall), warm word cache |\n"
           "| --- | --- | --- | --- | --- |\n");
    for (int a = 1; a < argc; a++) {
        double load_cpu = 1e9, load_wall = 1e9;
        facet_tokenizer *tok = NULL;
        facet_error err;
        for (int k = 0; k < 3; k++) {
            if (tok) facet_tokenizer_free(tok);
            double c0 = cpu_ms(), w0 = wall_ms();
            if (facet_tokenizer_load(argv[a], &tok, &err)) {
                fprintf(stderr, "%s: %s\n", argv[a], err.message);
                return 1;
            }
            double dc = cpu_ms() - c0, dw = wall_ms() - w0;
            if (dc < load_cpu) load_cpu = dc;
            if (dw < load_wall) load_wall = dw;
        }
        double first_cpu = 0, first_wall = 0, warm_cpu = 1e9, warm_wall = 1e9;
        size_t ntok = 0;
        for (int k = 0; k < 4; k++) {
            int32_t *ids;
            double c0 = cpu_ms(), w0 = wall_ms();
            if (facet_tokenize(tok, text, size, 1, &ids, &ntok, &err)) {
                fprintf(stderr, "%s: %s\n", argv[a], err.message);
                return 1;
            }
            double dc = cpu_ms() - c0, dw = wall_ms() - w0;
            free(ids);
            if (k == 0) {
                first_cpu = dc, first_wall = dw;
            } else {
                if (dc < warm_cpu) warm_cpu = dc;
                if (dw < warm_wall) warm_wall = dw;
            }
        }
        const char *name = strrchr(argv[a], '/');
        double mb = size / 1e6;
        printf("| %s | %.0f (%.0f) | %zu | %.1f (%.1f) | %.1f (%.1f) |\n", name ? name + 1 : argv[a], load_cpu, load_wall,
               ntok, mb / (first_cpu / 1e3), mb / (first_wall / 1e3), mb / (warm_cpu / 1e3), mb / (warm_wall / 1e3));
        facet_tokenizer_free(tok);
    }
    free(text);
    return 0;
}
