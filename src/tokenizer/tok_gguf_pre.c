/* tok_gguf_pre.c — the pre-tokenizers a GGUF file names in tokenizer.ggml.pre, for
 * tokenizer.ggml.model = gpt2 (byte-level BPE).
 *
 * A name stands for a list of regular expressions applied one after the other, as
 * llama.cpp's llama-vocab.cpp (llm_tokenizer_bpe) defines them: each expression splits
 * every piece left by the previous ones into its matches and the text between them,
 * both kept (tokenizers' Split with behavior Isolated); the pieces are then mapped by
 * the GPT-2 byte alphabet and merged by BPE. The expressions are those of each model's
 * tokenizer.json, in the form llama.cpp runs them (its case-insensitive contractions
 * spelled out as ASCII classes, "$" as the end of the piece). The table also carries
 * llama.cpp's per-name switches: ignore_merges (a word that is a token is taken whole),
 * the clean-up of spaces on decoding, and whether BOS is added when the file has no
 * tokenizer.ggml.add_bos_token. */
#include <stdio.h>
#include <string.h>

#include "tokenizer/tok_gguf_pre.h"

/* the contractions, case-insensitive over ASCII letters */
#define CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
/* GPT-2's split (without the final \s+: what it leaves is kept as a piece anyway) */
#define GPT2_SPLIT "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
/* Llama 3 / cl100k's split, with the digit run length as a parameter */
#define LLAMA3_SPLIT(DIGITS)                                                                      \
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}" DIGITS "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*" \
                 "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* GPT-4o / o200k's split: words by case shape, contractions glued on */
#define GPT4O_CASED_WORD                                                                        \
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"                                                            \
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"

/* DeepSeek LLM: letters of the cased scripts (its tokenizer.json's class), ASCII and
 * full-width punctuation, CJK runs and digit runs, each its own split. */
static const char *const deepseek_llm[] = {
    "[\\r\\n]",
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}"
    "\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}"
    "\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}"
    "\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}"
    "\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}"
    "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}"
    "\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}"
    "\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}"
    "\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}"
    "\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}"
    "\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}"
    "\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}"
    "\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}"
    "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}"
    "\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+",
    "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
    "\\s+\\z",
    "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+",
    "\\p{N}+",
    NULL};
static const char *const deepseek_coder[] = {
    "[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+",
    "\\p{N}", NULL};
static const char *const deepseek_v3[] = {
    "\\p{N}{1,3}", "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
    "| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const falcon[] = {"[\\p{P}\\$\\+<=>\\^~\\|`]+", GPT2_SPLIT, "[0-9][0-9][0-9]", NULL};
static const char *const starcoder[] = {"\\p{N}", GPT2_SPLIT, NULL};
static const char *const gpt2[] = {GPT2_SPLIT, NULL};
static const char *const llama3[] = {LLAMA3_SPLIT("{1,3}"), NULL};
static const char *const qwen2[] = {LLAMA3_SPLIT(""), NULL};
static const char *const qwen35[] = {
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*"
                 "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const bloom[] = {" ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+",
                                    NULL};
static const char *const viking[] = {" ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+",
                                     "\\p{N}", NULL};
static const char *const tekken[] = {
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
    "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const gpt4o[] = {
    GPT4O_CASED_WORD "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", NULL};
static const char *const dflt[] = {"[\\p{P}\\$\\+<=>\\^~\\|]+", GPT2_SPLIT, "\\p{N}+", "[0-9][0-9][0-9]", NULL};

/* name, expressions, ignore_merges, clean up spaces on decoding, BOS added by default */
static const tok_gguf_pre table[] = {
    {"default", dflt, 0, 1, 0},
    {"llama3", llama3, 1, 1, 1},        {"llama-v3", llama3, 1, 1, 1},      {"llama-bpe", llama3, 1, 1, 1},
    {"falcon3", llama3, 1, 1, 1},       {"pixtral", llama3, 1, 1, 1},       {"dbrx", llama3, 0, 1, 0},
    {"smaug-bpe", llama3, 0, 1, 0},     {"chatglm-bpe", llama3, 0, 1, 0},   {"glm4", llama3, 0, 1, 0},
    {"deepseek-llm", deepseek_llm, 0, 0, 0},
    {"deepseek-coder", deepseek_coder, 0, 0, 0},
    {"deepseek-v3", deepseek_v3, 0, 0, 0},
    {"falcon", falcon, 0, 1, 0},
    {"starcoder", starcoder, 0, 1, 0},  {"refact", starcoder, 0, 1, 0},     {"command-r", starcoder, 0, 0, 0},
    {"smollm", starcoder, 0, 0, 0},     {"codeshell", starcoder, 0, 1, 0},  {"exaone", starcoder, 0, 1, 0},
    {"minerva-7b", starcoder, 0, 1, 0},
    {"gpt-2", gpt2, 0, 1, 0},           {"phi-2", gpt2, 0, 1, 0},           {"mpt", gpt2, 0, 1, 0},
    {"olmo", gpt2, 0, 1, 0},            {"jais", gpt2, 0, 1, 0},            {"roberta-bpe", gpt2, 0, 1, 0},
    {"qwen2", qwen2, 0, 0, 0},          {"deepseek-r1-qwen", qwen2, 0, 0, 0}, {"stablelm2", qwen2, 0, 1, 0},
    {"megrez", qwen2, 0, 1, 0},
    {"qwen35", qwen35, 0, 0, 0},
    {"poro-chat", bloom, 0, 0, 0},      {"bloom", bloom, 0, 1, 0},          {"gpt3-finnish", bloom, 0, 1, 0},
    {"viking", viking, 0, 0, 0},
    {"tekken", tekken, 1, 0, 1},
    {"gpt-4o", gpt4o, 0, 0, 0},         {"llama4", gpt4o, 0, 0, 0},
    {NULL, NULL, 0, 0, 0},
};

const tok_gguf_pre *tok_gguf_pre_find(const char *name, size_t len) {
    for (const tok_gguf_pre *p = table; p->name; p++)
        if (strlen(p->name) == len && !memcmp(p->name, name, len)) return p;
    return NULL;
}

void tok_gguf_pre_names(char *buf, size_t cap) {
    size_t n = 0;
    if (cap) buf[0] = '\0';
    for (const tok_gguf_pre *p = table; p->name && n + strlen(p->name) + 3 < cap; p++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", p->name);
}
