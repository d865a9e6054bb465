/* Chat messages from JSON: an array of {"role", "content"} objects, or an
 * object holding such an array under "messages" (OpenAI request style). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer/tokenizer.h"

int sx_chat_parse_json(const char *json, size_t len, sx_chat_msg **msgs, size_t *n, void **owner,
                       sx_error *err)
{
    json_error_t je;
    json_t *root, *list, *m;
    sx_chat_msg *v = NULL;
    const char *base = "";
    size_t i;
    int rc;
    char ptr[96];
    *msgs = NULL;
    *n = 0;
    *owner = NULL;
    root = json_loadb(json, len, 0, &je);
    if (!root)
        return sx_err_setp(err, SX_EFORMAT, NULL, (long)je.position,
                           "messages are not valid JSON (line %d, column %d): %s", je.line,
                           je.column, je.text);
    list = root;
    if (json_is_object(root)) {
        list = json_object_get(root, "messages");
        base = "/messages";
    }
    if (!json_is_array(list)) {
        rc = sx_err_setp(err, SX_EFORMAT, base, -1,
                         "expected a JSON array of messages or {\"messages\": [...]}");
        goto fail;
    }
    if (!(v = calloc(json_array_size(list) + 1, sizeof *v))) {
        rc = sx_err_set(err, SX_ENOMEM, "out of memory reading messages");
        goto fail;
    }
    json_array_foreach(list, i, m) {
        json_t *role = json_object_get(m, "role"), *content = json_object_get(m, "content");
        snprintf(ptr, sizeof ptr, "%s/%zu", base, i);
        if (!json_is_object(m)) {
            rc = sx_err_setp(err, SX_EFORMAT, ptr, -1, "message %zu is not an object", i);
            goto fail;
        }
        if (!json_is_string(role)) {
            rc = sx_err_setp(err, SX_EFORMAT, ptr, -1, "message %zu has no \"role\" string", i);
            goto fail;
        }
        if (json_object_get(m, "tool_calls") || json_object_get(m, "reasoning_content")) {
            rc = sx_err_setp(err, SX_EUNSUPPORTED, ptr, -1,
                             "message %zu: tool_calls and reasoning_content are not supported", i);
            goto fail;
        }
        if (!json_is_string(content)) {
            snprintf(ptr, sizeof ptr, "%s/%zu/content", base, i);
            rc = sx_err_setp(err, json_is_array(content) ? SX_EUNSUPPORTED : SX_EFORMAT, ptr, -1,
                             "message %zu: \"content\" must be a string", i);
            goto fail;
        }
        v[i].role = json_string_value(role);
        v[i].content = json_string_value(content);
    }
    *msgs = v;
    *n = json_array_size(list);
    *owner = root;
    return SX_OK;
fail:
    free(v);
    json_decref(root);
    return rc;
}

void sx_chat_msgs_free(sx_chat_msg *msgs, void *owner)
{
    free(msgs);
    if (owner)
        json_decref(owner);
}
