/* sx_sg: random JSON Schemas, for the schema fuzzer (`strux fuzzschema`).
 *
 * Contract of grammar/fuzzgen/ (beside fuzzgen.h); uses jansson only.
 *
 * fuzzgen samples documents from a schema's masks; this makes the schemas:
 * small random ones built from the keywords strux supports -- recursion
 * through $ref into $defs (also mutual), oneOf/anyOf/allOf/not, objects of
 * optional properties only, patternProperties, patterns, uniqueItems,
 * contains with minContains/maxContains, if/then/else, dependentRequired
 * and dependentSchemas, numbers with bounds and multipleOf, formats,
 * enum/const.  The fuzzer compiles each under a time budget and samples it;
 * a slow compile or mask, or a document the validator refuses, is a bug
 * (bounded work, issue 28, and soundness).
 *
 * A schema is a function of (seed, index) only, so a failure is reproduced
 * from the two numbers; schemas strux declines are expected (not every
 * combination is enforceable) and only counted by the fuzzer. */
#ifndef SX_SCHEMAGEN_H
#define SX_SCHEMAGEN_H

#include <jansson.h>
#include <stdint.h>

/* Schema `index` of the run `seed`: a new reference (the caller
 * decrefs), NULL when out of memory.  size (1..8; 3 is typical) scales
 * how many subschemas it nests. */
json_t *sx_sg_schema(uint64_t seed, uint64_t index, int size);

#endif
