import { existsSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { withFileMutex } from "../../src/common/index.js";
import { tempDir } from "../helpers/job-files.js";

describe("withFileMutex", () => {
	it("runs one read-modify-write at a time: the second starts once the first released the lock", async () => {
		const path = join(tempDir(), "shared.prom");
		const order: string[] = [];
		let releaseFirst = () => {};
		const firstHolds = new Promise<void>((resolve) => {
			releaseFirst = resolve;
		});
		let firstEntered = () => {};
		const entered = new Promise<void>((resolve) => {
			firstEntered = resolve;
		});
		const first = withFileMutex(path, async () => {
			order.push("first in");
			firstEntered();
			await firstHolds;
			order.push("first out");
		});
		await entered;
		const second = withFileMutex(path, async () => {
			order.push("second");
		});
		expect(existsSync(join(path, "..", ".shared.prom.lock"))).toBe(true);
		releaseFirst();
		await Promise.all([first, second]);
		expect(order).toEqual(["first in", "first out", "second"]);
		expect(existsSync(join(path, "..", ".shared.prom.lock"))).toBe(false);
	});

	it("takes over a lock its holder left when it was killed, and never holds its caller past waitMs", async () => {
		const dir = tempDir();
		const path = join(dir, "shared.prom");
		const lock = join(dir, ".shared.prom.lock");
		writeFileSync(lock, "");
		const old = new Date(Date.now() - 60_000);
		utimesSync(lock, old, old);
		expect(await withFileMutex(path, async () => "ran")).toBe("ran");
		expect(existsSync(lock)).toBe(false);
		// A fresh lock nobody releases: the write goes on without it once waitMs is over.
		writeFileSync(lock, "");
		expect(await withFileMutex(path, async () => "ran anyway", { waitMs: 50 })).toBe("ran anyway");
		expect(existsSync(lock)).toBe(true);
	});
});
