/* reasoning.c — split <think>...</think> from a reasoning model's answer (reasoning.h). */
#include "server/reasoning.h"

#include <string.h>

static const char OPEN[] = "<think>", CLOSE[] = "</think>";
#define OPEN_LEN (sizeof OPEN - 1)
#define CLOSE_LEN (sizeof CLOSE - 1)

int srv_reasoning_template(const char *source) {
    return source && strstr(source, OPEN) && strstr(source, CLOSE);
}

/* The last occurrence of needle (n bytes) in hay (len bytes), or NULL. */
static const char *last_of(const char *hay, size_t len, const char *needle, size_t n) {
    if (len < n) return NULL;
    for (size_t i = len - n + 1; i-- > 0;)
        if (!memcmp(hay + i, needle, n)) return hay + i;
    return NULL;
}

/* The first occurrence of needle (n bytes) in hay (len bytes), or NULL. */
static const char *first_of(const char *hay, size_t len, const char *needle, size_t n) {
    for (size_t i = 0; i + n <= len; i++)
        if (!memcmp(hay + i, needle, n)) return hay + i;
    return NULL;
}

int srv_reasoning_open(const char *prompt, size_t len) {
    const char *o = last_of(prompt, len, OPEN, OPEN_LEN);
    const char *c = last_of(prompt, len, CLOSE, CLOSE_LEN);
    return o && (!c || o > c);
}

static int blank(char ch) { return ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t'; }

/* The length of the longest tail of text (len bytes) that is a proper prefix of tag. */
static size_t partial_tail(const char *text, size_t len, const char *tag, size_t n) {
    for (size_t k = n - 1 < len ? n - 1 : len; k > 0; k--)
        if (!memcmp(text + len - k, tag, k)) return k;
    return 0;
}

void srv_reasoning_split_text(const char *text, size_t len, int open, int final,
                              srv_reasoning_split *out) {
    memset(out, 0, sizeof *out);
    size_t start = 0;
    if (!open) {
        /* the output reasons only when it opens with <think> (after blanks) */
        size_t b = 0;
        while (b < len && blank(text[b])) b++;
        size_t rest = len - b;
        if (rest >= OPEN_LEN && !memcmp(text + b, OPEN, OPEN_LEN)) {
            start = b + OPEN_LEN;
        } else if (!final && rest < OPEN_LEN && !memcmp(text + b, OPEN, rest)) {
            return; /* all blank, or a start of <think>: undecided, nothing to send */
        } else {
            out->c_end = len; /* no reasoning: all content, as without the split */
            return;
        }
    }
    out->has_reasoning = 1;
    out->r_beg = start;
    const char *c = first_of(text + start, len - start, CLOSE, CLOSE_LEN);
    if (!c) {
        out->r_end =
            final ? len : len - partial_tail(text + start, len - start, CLOSE, CLOSE_LEN);
        out->c_beg = out->c_end = len;
        return;
    }
    out->r_end = (size_t)(c - text);
    size_t b = out->r_end + CLOSE_LEN;
    while (b < len && blank(text[b])) b++; /* only blanks so far: nothing yet */
    out->c_beg = b;
    out->c_end = len;
}
