/* stats.h — small summaries of measured samples (benchmarks). */
#ifndef FACET_UTIL_STATS_H
#define FACET_UTIL_STATS_H

/* Median of x[0..n): the middle value, or the mean of the two middle values when n is
 * even. n >= 1; x is sorted in place (ascending). */
double facet_median(double *x, int n);

#endif
