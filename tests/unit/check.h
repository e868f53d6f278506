/* Tiny assertion macros for unit tests: print both operands and the place on failure. */
#ifndef WEFT_CHECK_H
#define WEFT_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} } while (0)

#define CHECK_INT(a, op, b) do { \
	long long a_ = (long long)(a), b_ = (long long)(b); \
	if (!(a_ op b_)) { \
		fprintf(stderr, "%s:%d: CHECK_INT(%s %s %s) failed: %lld vs %lld\n", \
			__FILE__, __LINE__, #a, #op, #b, a_, b_); \
		abort(); \
	} } while (0)

#define CHECK_STR(a, b) do { \
	const char *a_ = (a), *b_ = (b); \
	if (strcmp(a_, b_) != 0) { \
		fprintf(stderr, "%s:%d: CHECK_STR(%s, %s) failed: \"%s\" vs \"%s\"\n", \
			__FILE__, __LINE__, #a, #b, a_, b_); \
		abort(); \
	} } while (0)

#define CHECK_OK(expr) CHECK_INT((expr), ==, 0)

#endif
