import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeDirectory, readRegularFile } from "../../common/index.js";
import { OutputError } from "../../output/index.js";
import type { FetchResult } from "./fetch-target.js";

type OkResult = Extract<FetchResult, { kind: "ok" }>;

/** What a paid answer's journal line keeps: everything of its fetch but the body, which is in its file. */
export interface PaidAnswer {
	readonly id: string;
	readonly credits: number;
	readonly httpStatus: number;
	readonly contentType: string | null;
	readonly creditsRemaining: number | null;
	readonly modeUsed: string | null;
	readonly attempts: number;
	readonly taskId: string | null;
	readonly title: string | null;
	readonly finalUrl: string | null;
	/** The body is a JSON delivery (`delivery: json`): parsed again when the answer is read back. */
	readonly json: boolean;
	/** The body's length: a file cut short by a kill mid-write is not taken for the answer. */
	readonly bytes?: number;
}

/** The folder of a run where paid answers wait for their page to be read (`paid/<id>`). */
export const PAID_DIR = "paid";

/**
 * Paid answers kept until their record is written (docs/behaviour.md, "Pay once, never lose a record"): an answer whose page
 * still waits for the page pool (links, extraction) when the process dies was paid and has no record;
 * without this, `--resume` fetched it again. Its body goes to `paid/<id>` and a journal line says it was
 * paid, before any parse; a resume reads the stored answer instead of fetching, and the file goes once
 * the record is written.
 */
export function createPaidAnswers(runDir: string) {
	const dir = join(runDir, PAID_DIR);
	let made = false;
	return {
		/** Keep one answer's body (the caller journals its `PaidAnswer` next). Throws `OutputError`. */
		keep(id: string, body: Buffer): void {
			const path = join(dir, id);
			try {
				if (!made) makeDirectory(dir);
				made = true;
				writeFileSync(path, body);
			} catch (error) {
				throw new OutputError(path, error);
			}
		},
		/** The record is written: the answer's file is no longer needed. */
		settled(id: string): void {
			rmSync(join(dir, id), { force: true });
		},
		/** A stored answer back as the fetch it was; null when its file is gone or unreadable (then fetched again). */
		restore(answer: PaidAnswer, maxBytes: number): OkResult | null {
			let body: Buffer;
			try {
				body = readRegularFile(join(dir, answer.id), maxBytes);
			} catch {
				return null;
			}
			// A file cut short (a kill while it was written again for the same target) is not the answer.
			if (answer.bytes !== undefined && body.length !== answer.bytes) return null;
			let json: Record<string, unknown> | undefined;
			if (answer.json) {
				try {
					json = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
				} catch {
					return null;
				}
			}
			return {
				kind: "ok",
				body,
				contentType: answer.contentType ?? undefined,
				title: answer.title ?? undefined,
				httpStatus: answer.httpStatus,
				creditsUsed: answer.credits,
				creditsRemaining: answer.creditsRemaining,
				modeUsed: answer.modeUsed,
				attempts: answer.attempts,
				taskId: answer.taskId,
				json,
				finalUrl: answer.finalUrl ?? undefined,
				spilled: undefined,
			};
		},
	};
}
export type PaidAnswers = ReturnType<typeof createPaidAnswers>;

/** The journal line's fields for a paid answer. */
export function paidAnswerOf(id: string, result: OkResult, charged: number): PaidAnswer {
	return {
		id,
		credits: charged,
		httpStatus: result.httpStatus,
		contentType: result.contentType ?? null,
		creditsRemaining: result.creditsRemaining,
		modeUsed: result.modeUsed,
		attempts: result.attempts,
		taskId: result.taskId,
		title: result.title ?? null,
		finalUrl: result.finalUrl ?? null,
		json: result.json !== undefined,
		bytes: result.body.length,
	};
}
