/* cpu_features.c — run-time detection of the SIMD paths (cpuid), lowered by FACET_CPU. */
#include "kernels/cpu/cpu_features.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static facet_cpu_info g_info;
static char g_note[160]; /* why FACET_CPU did not take effect ("" when it did / unset) */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

/* Which register states the OS saves (XCR0): AVX needs 0x6, AVX-512 also 0xe0. */
static unsigned long long xcr0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}
#endif

/* cpuid leaves 1 and 7 (Intel SDM vol. 2A, CPUID; AMD APM vol. 3, same bits). */
static void detect(void) {
    facet_cpu_info in = {FACET_CPU_SCALAR, FACET_CPU_SCALAR, 0, 0};
    int bf16 = 0, vnni = 0;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    int avx2 = 0, avx512 = 0;
    if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 27)) /* OSXSAVE */) {
        int fma = (c >> 12) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
        unsigned long long x = xcr0();
        int os_avx = (x & 0x6) == 0x6, os_avx512 = (x & 0xe6) == 0xe6;
        if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
            avx2 = fma && avx && f16c && os_avx && ((b >> 5) & 1);
            avx512 = avx2 && os_avx512 && ((b >> 16) & 1) /* F */ && ((b >> 17) & 1) /* DQ */ &&
                     ((b >> 30) & 1) /* BW */ && ((b >> 31) & 1) /* VL */;
            vnni = avx512 && ((c >> 11) & 1);
            unsigned max7 = a;
            if (max7 >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) bf16 = avx512 && ((a >> 5) & 1);
        }
    }
    in.detected = avx512 ? FACET_CPU_AVX512 : avx2 ? FACET_CPU_AVX2 : FACET_CPU_SCALAR;
#endif
    in.level = in.detected;
    const char *env = getenv("FACET_CPU");
    if (env && !strcmp(env, "scalar")) in.level = FACET_CPU_SCALAR;
    else if (env && !strcmp(env, "avx2") && in.level > FACET_CPU_AVX2) in.level = FACET_CPU_AVX2;
    /* a path forced by name that does not run is noted (facet_cpu_note): a test that
     * thinks it forced a path must not pass on another one */
    g_note[0] = '\0';
    if (env && *env && strcmp(env, "scalar") && strcmp(env, "avx2") && strcmp(env, "avx512"))
        snprintf(g_note, sizeof g_note, "FACET_CPU='%.60s' is not one of scalar, avx2, avx512: ignored",
                 env);
    else if (env && ((!strcmp(env, "avx2") && in.detected < FACET_CPU_AVX2) ||
                     (!strcmp(env, "avx512") && in.detected < FACET_CPU_AVX512)))
        snprintf(g_note, sizeof g_note, "FACET_CPU=%s: this CPU lacks it; the %s path runs", env,
                 in.level == FACET_CPU_AVX2 ? "avx2" : "scalar");
    in.avx512_bf16 = in.level == FACET_CPU_AVX512 && bf16;
    in.avx512_vnni = in.level == FACET_CPU_AVX512 && vnni;
    g_info = in;
}

const facet_cpu_info *facet_cpu(void) {
    pthread_once(&g_once, detect);
    return &g_info;
}

void facet_cpu_refresh(void) {
    pthread_once(&g_once, detect);
    detect();
}

const char *facet_cpu_note(void) {
    pthread_once(&g_once, detect);
    return g_note[0] ? g_note : NULL;
}

const char *facet_cpu_level_name(facet_cpu_level l) {
    switch (l) {
    case FACET_CPU_SCALAR: return "scalar";
    case FACET_CPU_AVX2: return "avx2";
    case FACET_CPU_AVX512: return "avx512";
    }
    return "unknown";
}
