import { type RequestedMode, RECORD_COLUMNS as SHARED_RECORD_COLUMNS } from "../common/index.js";

export const RECORD_STATUSES = ["ok", "failed", "skipped"] as const;
/** A record's `status`; `skipped` only in records of older versions. */
export type RecordStatus = (typeof RECORD_STATUSES)[number];

/**
 * One result per target (docs/reference/outputs.md). Field order is the CSV column order;
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
	mode_requested: RequestedMode;
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
	/** Hash of the extracted data (with `extract:`) or of the content; ok records only (incremental runs). */
	content_hash: string | null;
	/** Against the target's previous ok record in this job: `new` | `changed` | `unchanged`. */
	change: RecordChange | null;
	/** Crawl depth (seeds are 0); null outside a crawl. */
	depth: number | null;
	/** Id of the page that linked this one (crawl); null for seeds and outside a crawl. */
	parent: string | null;
	/**
	 * Whether the record is worth its credits (docs/behaviour.md, "Useful records"): ok, its required
	 * fields filled, its page matching none of the job's block signatures. Absent in records written before it existed.
	 */
	useful?: boolean;
	/** Why it is not useful: `block_signature: …`, `required_empty: …`, or a failed record's error kind; null when useful. */
	useless_reason?: string | null;
	/** Extracted fields (`extract:`, service-side extraction); a CSV column each, between `content_path` and `content_hash`. */
	data?: Record<string, unknown>;
	/**
	 * Fields the target's previous ok record did not have (the job's `extract:` gained them since): filled
	 * now, they are not a change (`change` and `max_changed` count fields both records have).
	 */
	added_fields?: string[];
	content?: string;
}

export const RECORD_CHANGES = ["new", "changed", "unchanged"] as const;
export type RecordChange = (typeof RECORD_CHANGES)[number];

/** CSV columns, declared once (common/record-columns.ts) and checked here against the record type. */
export const RECORD_COLUMNS = SHARED_RECORD_COLUMNS satisfies ReadonlyArray<
	Exclude<keyof ResultRecord, "content" | "data">
>;
