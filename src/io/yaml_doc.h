/* Loading a small YAML file (parameter files, galaxy models) as one
 * libyaml document, with the checks every such file needs: a regular file
 * (a FIFO would block), at most BN_PARAM_FILE_MAX bytes, nesting at most
 * BN_PARAM_YAML_DEPTH deep, valid syntax (the message names the line),
 * and one document only. Scalars' helpers for the readers. */
#ifndef BN_IO_YAML_DOC_H
#define BN_IO_YAML_DOC_H
#include <yaml.h>
#include "banyan.h"

/* `what` names the file in messages ("parameter file"). On BN_OK the
 * caller deletes *doc (yaml_document_delete). */
bn_status bn_yaml_load(const char *path, const char *what, yaml_document_t *doc);

static inline int bn_yaml_line(const yaml_node_t *n) { return (int)n->start_mark.line + 1; }
static inline const char *bn_yaml_scalar(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }
/* A plain ~ / null / empty scalar is YAML's null: "". */
const char *bn_yaml_scalar_text(const yaml_node_t *n);
/* A scalar with a NUL inside ("e\0x.txt") would be cut at it. */
int bn_yaml_has_nul(const yaml_node_t *n);
#endif
