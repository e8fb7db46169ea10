/*
 * utf8.h — UTF-8 validation (RFC 3629: no overlongs, no surrogates, at most U+10FFFF).
 */
#ifndef FACET_UTIL_UTF8_H
#define FACET_UTIL_UTF8_H

#include <stddef.h>

/* Length of the longest valid UTF-8 prefix of s[0..len): equals len when all of it is
 * valid, otherwise the byte offset of the first invalid or truncated sequence. */
size_t facet_utf8_validate(const char *s, size_t len);

/* Bytes of the incomplete UTF-8 sequence at the end of s[0..len) (0..3): a lead byte
 * followed by fewer continuation bytes than it announces. 0 when s ends on a character
 * boundary (or with invalid bytes, which are not "incomplete"). */
size_t facet_utf8_incomplete_tail(const char *s, size_t len);

#endif
