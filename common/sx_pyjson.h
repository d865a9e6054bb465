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

#endif
