/* A model directory's weights: one model.safetensors, or shards listed by
 * model.safetensors.index.json.  The index is cross-checked against the
 * shards so that every tensor name resolves to exactly one place. */
#include "engine/model/model.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sx_file.h"

#define MAX_SHARDS 4096

struct sx_st_set {
    size_t       n;
    sx_st_file **files;
};

void sx_st_set_close(sx_st_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        sx_st_close(s->files[i]);
    free(s->files);
    free(s);
}

size_t sx_st_set_files(const sx_st_set *s) { return s->n; }

const sx_st_file *sx_st_set_file(const sx_st_set *s, size_t i)
{
    return i < s->n ? s->files[i] : NULL;
}

size_t sx_st_set_count(const sx_st_set *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        n += sx_st_count(s->files[i]);
    return n;
}

const sx_st_tensor *sx_st_set_find(const sx_st_set *s, const char *name, const sx_st_file **file)
{
    for (size_t i = 0; i < s->n; i++) {
        const sx_st_tensor *t = sx_st_find(s->files[i], name);
        if (t) {
            if (file)
                *file = s->files[i];
            return t;
        }
    }
    return NULL;
}

static int join(char *out, size_t cap, const char *dir, const char *name, sx_error *err)
{
    if ((size_t)snprintf(out, cap, "%s/%s", dir, name) >= cap)
        return sx_err_set(err, SX_EINVAL, "path too long: %s/%s", dir, name);
    return SX_OK;
}

/* A shard name must stay inside the model directory. */
static int plain_name(const char *s)
{
    return s[0] && strcmp(s, ".") && strcmp(s, "..") && !strchr(s, '/');
}

static int open_index(const char *dir, const char *ipath, sx_st_set *s, sx_error *err)
{
    char *text = NULL;
    size_t len = 0;
    json_t *root = NULL;
    json_error_t je;
    char path[4096];
    int rc;
    if ((rc = sx_file_read(ipath, &text, &len, err)))
        return rc;
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        rc = sx_err_setp(err, SX_EFORMAT, NULL, je.position, "%s: line %d column %d: %s", ipath,
                         je.line, je.column, je.text);
        goto fail;
    }
    json_t *map = json_object_get(root, "weight_map");
    if (!json_is_object(map) || !json_object_size(map)) {
        rc = sx_err_setp(err, SX_EFORMAT, "/weight_map", -1,
                         "%s: \"weight_map\" missing, empty or not an object", ipath);
        goto fail;
    }
    const char *name;
    json_t *v;
    s->files = calloc(MAX_SHARDS, sizeof *s->files);
    if (!s->files) {
        rc = sx_err_set(err, SX_ENOMEM, "out of memory");
        goto fail;
    }
    /* open each distinct shard once, in order of first mention */
    json_object_foreach(map, name, v) {
        const char *shard = json_string_value(v);
        if (!shard || !plain_name(shard)) {
            rc = sx_err_set(err, SX_EFORMAT,
                            "%s: weight_map[\"%.100s\"] is not a file name in the directory",
                            ipath, name);
            goto fail;
        }
        if ((rc = join(path, sizeof path, dir, shard, err)))
            goto fail;
        int seen = 0;
        for (size_t i = 0; i < s->n && !seen; i++)
            seen = !strcmp(sx_st_path(s->files[i]), path);
        if (seen)
            continue;
        if (s->n == MAX_SHARDS) {
            rc = sx_err_set(err, SX_ELIMIT, "%s: more than %d shards", ipath, MAX_SHARDS);
            goto fail;
        }
        if ((rc = sx_st_open(path, &s->files[s->n], err)))
            goto fail;
        s->n++;
    }
    /* every tensor of a shard is listed there (so no name is in two shards) ... */
    for (size_t i = 0; i < s->n; i++)
        for (size_t k = 0; k < sx_st_count(s->files[i]); k++) {
            const sx_st_tensor *t = sx_st_at(s->files[i], k);
            json_t *where = json_object_get(map, t->name);
            if (!where || join(path, sizeof path, dir, json_string_value(where), NULL) ||
                strcmp(path, sx_st_path(s->files[i]))) {
                rc = sx_err_set(err, SX_EFORMAT, "%s: tensor %.200s is not listed in %s as being there",
                                sx_st_path(s->files[i]), t->name, ipath);
                goto fail;
            }
        }
    /* ... and every listed tensor is in its shard */
    json_object_foreach(map, name, v) {
        const sx_st_file *f = NULL;
        if ((rc = join(path, sizeof path, dir, json_string_value(v), err)))
            goto fail;
        if (!sx_st_set_find(s, name, &f) || strcmp(sx_st_path(f), path)) {
            rc = sx_err_set(err, SX_EFORMAT, "%s: tensor %.200s is not in %s, where the index puts it",
                            ipath, name, path);
            goto fail;
        }
    }
    rc = SX_OK;
fail:
    json_decref(root);
    free(text);
    return rc;
}

int sx_st_set_open(const char *dir, sx_st_set **out, sx_error *err)
{
    char path[4096];
    int rc;
    *out = NULL;
    sx_st_set *s = calloc(1, sizeof *s);
    if (!s)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    if ((rc = join(path, sizeof path, dir, "model.safetensors", err)))
        goto fail;
    if (sx_file_exists(path)) {
        if (!(s->files = calloc(1, sizeof *s->files))) {
            rc = sx_err_set(err, SX_ENOMEM, "out of memory");
            goto fail;
        }
        if ((rc = sx_st_open(path, &s->files[0], err)))
            goto fail;
        s->n = 1;
    } else {
        if ((rc = join(path, sizeof path, dir, "model.safetensors.index.json", err)))
            goto fail;
        if (!sx_file_exists(path)) {
            rc = sx_err_set(err, SX_EIO,
                            "%s: no model.safetensors or model.safetensors.index.json", dir);
            goto fail;
        }
        if ((rc = open_index(dir, path, s, err)))
            goto fail;
    }
    *out = s;
    return SX_OK;
fail:
    sx_st_set_close(s);
    return rc;
}
