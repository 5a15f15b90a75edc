import type { ResultRecord } from "../../src/output/index.js";

/** A plausible finished record, for tests of sinks and resume. */
export function record(id: string, overrides: Partial<ResultRecord> = {}): ResultRecord {
	return {
		id,
		url: `https://example.test/${id}`,
		status: "ok",
		http_status: 200,
		error: null,
		message: null,
		mode_requested: "request",
		mode_used: "request",
		credits_used: 2,
		credits_remaining: 100,
		attempts: 1,
		task_id: null,
		started_at: "2026-11-21T00:00:00.000Z",
		finished_at: "2026-11-21T00:00:01.000Z",
		duration_ms: 1000,
		bytes: 10,
		content_path: null,
		content_hash: null,
		change: null,
		depth: null,
		parent: null,
		...overrides,
	};
}
