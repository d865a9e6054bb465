/* sx_pyjson: JSON spelled as Python's json.dumps(v, ensure_ascii=False)
 * spells it (", " and ": " separators, key order kept, floats in
 * shortest round-trip form such as 0.1, 1e-05, 1e+20, 1.0). */
#ifndef SX_PYJSON_H
#define SX_PYJSON_H

#include <jansson.h>
#include <stddef.h>

/* Python's repr() of a finite double into buf. */
void sx_py_float_repr(double d, char *buf, size_t cap);

/* A malloc'd NUL-terminated text (the caller frees it), or NULL when out of
 * memory or nested too deeply. */
char *sx_pyjson_dumps(const json_t *v, size_t *len);

/* The same, for a tree read by sx_numjson_loadb: an integer that jansson
 * could not hold (kept as a real with its text in nums) is written with its
 * digits, as Python writes the int it reads (nums may be NULL). */
struct sx_numtab;
char *sx_pyjson_dumps_nums(const json_t *v, const struct sx_numtab *nums, size_t *len);

#endif
