// SPDX-License-Identifier: MIT
/*
 * export_report.c - the `report` formats as exports: the JSON of docs/design.md §9
 * and the CSV, written by the report code itself so both commands give the
 * same bytes for the same options.
 */
#include "report/export.h"

int rp_export_json(FILE *out, const struct rp_export_ctx *ctx)
{
    return rp_report_json(out, ctx->p, ctx->report);
}

int rp_export_csv(FILE *out, const struct rp_export_ctx *ctx)
{
    return rp_report_csv(out, ctx->p, ctx->report);
}
