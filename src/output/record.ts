import type { Mode } from "../shared/index.js";

export const RECORD_STATUSES = ["ok", "failed", "skipped"] as const;
export type RecordStatus = (typeof RECORD_STATUSES)[number];

/**
 * One result per target (shared/design.md, "Output"). Field order is the CSV column order;
 * `content` appears only in JSONL, and only with `output.content: inline`.
 */
export interface ResultRecord {
	id: string;
	url: string;
	status: RecordStatus;
	/** The target's status when known (200, or a passed-through 404), else the service's error status. */
	http_status: number | null;
	/** Short stable kind, e.g. `http_503`, `dns_failed`, `target_http_404`, `budget_exhausted`. */
	error: string | null;
	message: string | null;
	mode_requested: Mode;
	/** As the service reported it (`X-Mode-Used`), e.g. "auto (browser)". */
	mode_used: string | null;
	credits_used: number;
	credits_remaining: number | null;
	/** Fetch attempts made, the first included (429 waits are not attempts). */
	attempts: number;
	task_id: string | null;
	started_at: string;
	finished_at: string;
	duration_ms: number;
	/** Size of the content the service returned, bytes. */
	bytes: number;
	/** Path of the content file relative to the run folder (`output.content: files`). */
	content_path: string | null;
	content?: string;
}

/** CSV columns, declared once from the record type — never taken from whichever record comes first. */
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
] as const satisfies ReadonlyArray<Exclude<keyof ResultRecord, "content">>;
