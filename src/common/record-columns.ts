/**
 * A result record's own fields, in CSV column order (docs/reference/outputs.md): declared once, here,
 * so the CSV header (output/) and the names a job may not give its fields (job/) are the same list.
 * `output/record.ts` checks it against the record type.
 */
export const RECORD_COLUMNS = [
	"id",
	"url",
	"status",
	"http_status",
	"error",
	"message",
	"mode_requested",
	"mode_used",
	"credits_used",
	"credits_remaining",
	"attempts",
	"task_id",
	"started_at",
	"finished_at",
	"duration_ms",
	"bytes",
	"content_path",
	"content_hash",
	"change",
	"depth",
	"parent",
	"useful",
	"useless_reason",
] as const;
