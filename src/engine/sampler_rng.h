/*
 * sampler_rng.h — the sampler's PRNG: xoshiro256** 1.0 seeded with SplitMix64
 * (Blackman & Vigna, https://prng.di.unimi.it/). Internal to the engine; exposed for
 * the unit tests that check it against reference outputs.
 */
#ifndef FACET_ENGINE_SAMPLER_RNG_H
#define FACET_ENGINE_SAMPLER_RNG_H

#include <stdint.h>

typedef struct facet_rng {
    uint64_t s[4];
} facet_rng;

/* state[i] = successive outputs of SplitMix64 started at `seed`, i = 0..3. */
void facet_rng_seed(facet_rng *r, uint64_t seed);

/* Next 64-bit output of xoshiro256**. */
uint64_t facet_rng_next(facet_rng *r);

/* Uniform double in [0, 1): (next() >> 11) * 2^-53. */
double facet_rng_uniform(facet_rng *r);

#endif
