/* sx_rpc: a tool call's arguments streamed as they are written (see
 * tool_stream.h). */
#include <jansson.h>
#include <string.h>

#include "rpc/tool_stream.h"

/* where in the outer object: before its '{', expecting a key (or '}'),
 * inside a key, expecting ':', expecting a value, inside one, expecting
 * ',' or '}', after the object */
enum { CS_START = 0, CS_KEY, CS_INKEY, CS_COLON, CS_VALUE, CS_INVALUE, CS_COMMA, CS_END };

void sx_rpc_callscan_init(sx_rpc_callscan *c)
{
    memset(c, 0, sizeof *c);
}

static int is_ws(char ch)
{
    return ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t';
}

static void raw_add(sx_rpc_callscan *c, char ch)
{
    if (c->n_raw < sizeof c->raw)
        c->raw[c->n_raw++] = ch;
    else
        c->raw_over = 1;
}

/* The literal in raw as a string (its escapes decoded) into out; 0 when
 * it is not one or does not fit. */
static int raw_string(const sx_rpc_callscan *c, char *out, size_t cap)
{
    if (c->raw_over)
        return 0;
    json_t *s = json_loadb(c->raw, c->n_raw, JSON_DECODE_ANY, NULL);
    int ok = json_is_string(s) && json_string_length(s) < cap &&
             strlen(json_string_value(s)) == json_string_length(s);
    if (ok)
        memcpy(out, json_string_value(s), json_string_length(s) + 1);
    json_decref(s);
    return ok;
}

/* The value in progress has ended. */
static void value_end(sx_rpc_callscan *c)
{
    if (c->which == 1) {
        c->have_name = raw_string(c, c->name, sizeof c->name);
        if (!c->have_name)
            c->fallback = 1;
    } else if (c->which == 2) {
        c->args_done = 1;
    }
    c->state = CS_COMMA;
}

int sx_rpc_callscan_feed(sx_rpc_callscan *c, const char *p, size_t n, sx_bytes *frag)
{
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
    again:
        switch (c->state) {
        case CS_START:
            /* the tag's newline (or a forced call's tag) comes first */
            if (ch == '{')
                c->state = CS_KEY;
            break;
        case CS_KEY:
            if (ch == '"') {
                c->n_raw = 0;
                c->raw_over = 0;
                c->in_str = 1;
                c->esc = 0;
                raw_add(c, ch);
                c->state = CS_INKEY;
            } else if (ch == '}') {
                c->state = CS_END;
            } else if (!is_ws(ch)) {
                c->fallback = 1;
                c->state = CS_END;
            }
            break;
        case CS_INKEY:
            raw_add(c, ch);
            if (c->esc) {
                c->esc = 0;
            } else if (ch == '\\') {
                c->esc = 1;
            } else if (ch == '"') {
                char key[16];
                c->in_str = 0;
                c->which = 0;
                if (raw_string(c, key, sizeof key))
                    c->which = !strcmp(key, "name") ? 1 : !strcmp(key, "arguments") ? 2 : 0;
                c->state = CS_COLON;
            }
            break;
        case CS_COLON:
            if (ch == ':')
                c->state = CS_VALUE;
            else if (!is_ws(ch)) {
                c->fallback = 1;
                c->state = CS_END;
            }
            break;
        case CS_VALUE:
            if (is_ws(ch))
                break;
            c->state = CS_INVALUE;
            c->vdepth = 0;
            c->in_str = c->esc = 0;
            c->n_raw = 0;
            c->raw_over = 0;
            if (c->which == 2)
                c->args_begun = 1;
            goto again;
        case CS_INVALUE: {
            int ends = 0;
            if (c->in_str) {
                if (c->esc)
                    c->esc = 0;
                else if (ch == '\\')
                    c->esc = 1;
                else if (ch == '"') {
                    c->in_str = 0;
                    ends = c->vdepth == 0;
                }
            } else if (ch == '"') {
                c->in_str = 1;
            } else if (ch == '{' || ch == '[') {
                c->vdepth++;
            } else if (ch == '}' || ch == ']') {
                if (c->vdepth == 0) { /* a scalar ended by the outer '}' */
                    value_end(c);
                    goto again;
                }
                ends = --c->vdepth == 0;
            } else if (c->vdepth == 0 && (ch == ',' || is_ws(ch))) {
                value_end(c); /* a scalar's end */
                goto again;
            }
            if (c->which == 1)
                raw_add(c, ch);
            if (c->which == 2 && !c->fallback && sx_bytes_append(frag, &ch, 1))
                return SX_ENOMEM;
            if (ends)
                value_end(c);
            break;
        }
        case CS_COMMA:
            if (ch == ',')
                c->state = CS_KEY;
            else if (ch == '}')
                c->state = CS_END;
            else if (!is_ws(ch)) {
                c->fallback = 1;
                c->state = CS_END;
            }
            break;
        default: /* CS_END: the close that follows */
            break;
        }
    }
    return SX_OK;
}
