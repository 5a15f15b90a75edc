import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { createPaidAnswers, PAID_DIR, paidAnswerOf } from "../../src/run/target/paid-answers.js";
import { tempDir } from "../helpers/job-files.js";

const ok = {
	kind: "ok" as const,
	body: Buffer.from("<html><body><a href='/next'>next</a></body></html>"),
	contentType: "text/html",
	httpStatus: 200,
	creditsUsed: 2,
	creditsRemaining: 98,
	modeUsed: "request",
	attempts: 1,
	taskId: null,
	finalUrl: undefined,
	spilled: undefined,
};

it("a kept answer reads back as the fetch it was; one cut short or gone is not taken for it (fetched again)", () => {
	const runDir = tempDir();
	const paid = createPaidAnswers(runDir);
	paid.keep("p1", ok.body);
	const answer = paidAnswerOf("p1", ok, 2);
	expect(paid.restore(answer, 1 << 20)).toMatchObject({ kind: "ok", httpStatus: 200, creditsUsed: 2, attempts: 1 });
	expect(paid.restore(answer, 1 << 20)?.body.equals(ok.body)).toBe(true);
	// A kill while the file was being written leaves fewer bytes than the journal line says.
	writeFileSync(join(runDir, PAID_DIR, "p1"), ok.body.subarray(0, 10));
	expect(paid.restore(answer, 1 << 20)).toBeNull();
	paid.settled("p1");
	expect(paid.restore(answer, 1 << 20)).toBeNull();
});
