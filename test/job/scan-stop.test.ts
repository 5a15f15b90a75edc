import { spawn } from "node:child_process";
import {
	existsSync,
	mkdirSync,
	readdirSync,
	readFileSync,
	readlinkSync,
	rmSync,
	utimesSync,
	writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runJobFile, SourceScanStoppedError } from "../../src/index.js";
import { tempDir, writeJob } from "../helpers/job-files.js";
import { assertBuilt, spawnCli } from "../helpers/spawn-cli.js";

/**
 * Ctrl-C (or a supervisor's SIGTERM) while a large source is read — by `validate`, or by `run` before
 * its first fetch — stops the reading at once: exit 130, a line saying how far it got, nothing sent,
 * no run folder, and no temporary key folder left behind. It used to read on to the end (~3 s per
 * million rows) and then carry on as if nothing had happened.
 */
const ROWS = 600_000;

/** Where the process with `pid` has read `path` up to, or null while it has not opened it (Linux /proc). */
function readPosition(pid: number, path: string): number | null {
	try {
		for (const fd of readdirSync(`/proc/${pid}/fd`)) {
			let target: string;
			try {
				target = readlinkSync(`/proc/${pid}/fd/${fd}`);
			} catch {
				continue;
			}
			if (target !== path) continue;
			const position = /^pos:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/fdinfo/${fd}`, "utf8"));
			if (position) return Number(position[1]);
		}
	} catch {
		// The process is gone, or not yet there.
	}
	return null;
}

/** Resolve once the process has read into `path` (polled: the file's position is the only event there is). */
async function untilReading(pid: number, path: string, timeoutMs = 20_000): Promise<void> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		if ((readPosition(pid, path) ?? 0) > 0) return;
		if (Date.now() > deadline) throw new Error(`process ${pid} never read ${path}`);
		await new Promise((resolve) => setTimeout(resolve, 5));
	}
}

const keyFolders = (pid: number) => readdirSync(tmpdir()).filter((name) => name.startsWith(`scrapejob-keys-${pid}-`));

describe.runIf(process.platform === "linux")("stopping while the sources are read", () => {
	let dir: string;
	let job: string;
	let urls: string;

	beforeAll(() => {
		assertBuilt();
		dir = tempDir();
		urls = join(dir, "urls.txt");
		let text = "";
		for (let row = 1; row <= ROWS; row++) text += `https://shop.example/item/${row}\n`;
		writeFileSync(urls, text);
		job = writeJob(dir, "big", "name: big\nsources:\n  - file: urls.txt\n");
	});

	it("runJobFile: a signal aborted before the reading ends throws SourceScanStoppedError, nothing written", async () => {
		const out = join(dir, "out-library");
		const run = runJobFile(job, {
			cwd: dir,
			out,
			env: { SCRAPEJOB_SCRAPER_KEY: "sk_test_never_used", SCRAPEJOB_SCRAPER_URL: "http://127.0.0.1:9/api/v1" },
			signal: AbortSignal.abort(),
		});
		await expect(run).rejects.toBeInstanceOf(SourceScanStoppedError);
		await expect(run).rejects.toMatchObject({ code: "SCRAPEJOB_ABORTED" });
		expect(existsSync(out)).toBe(false);
	});

	for (const [command, signal] of [
		["validate", "SIGINT"],
		["run", "SIGTERM"],
	] as const) {
		it(`${command} --json: ${signal} while reading answers on stdout in JSON, exit 130`, async () => {
			const out = join(dir, `out-${command}-json`);
			const env = { SCRAPEJOB_SCRAPER_KEY: "sk_test_never_used", SCRAPEJOB_SCRAPER_URL: "http://127.0.0.1:9/api/v1" };
			const args = command === "run" ? ["run", job, "--out", out, "--json"] : ["validate", job, "--json"];
			const { child, done } = spawnCli(args, env, dir);
			await untilReading(child.pid!, urls);
			child.kill(signal);
			const { code, stdout } = await done;
			expect(code).toBe(130);
			expect(JSON.parse(stdout)).toMatchObject({ error: { code: "SCRAPEJOB_ABORTED" } });
		});

		it(`${command}: ${signal} stops the reading with exit 130 and leaves nothing behind`, async () => {
			const out = join(dir, `out-${command}`);
			// No service is reachable at this address: `run` would only fail after the reading.
			const env = { SCRAPEJOB_SCRAPER_KEY: "sk_test_never_used", SCRAPEJOB_SCRAPER_URL: "http://127.0.0.1:9/api/v1" };
			const args = command === "run" ? ["run", job, "--out", out, "--quiet"] : ["validate", job];
			const { child, done } = spawnCli(args, env, dir);
			await untilReading(child.pid!, urls);
			child.kill(signal);
			const { code, stderr } = await done;
			expect(code).toBe(130);
			const stopped = /stopped while reading the job's sources \((\d+) rows read\): nothing was sent/.exec(stderr);
			expect(stopped, stderr).not.toBeNull();
			expect(Number(stopped![1])).toBeLessThan(ROWS);
			expect(keyFolders(child.pid!)).toEqual([]);
			expect(existsSync(out)).toBe(false);
		});
	}

	it("a key folder left an hour ago by a scan whose process died is removed by the next scan; others stay", async () => {
		const died = spawn(process.execPath, ["-e", ""]);
		await new Promise((resolve) => died.once("exit", resolve));
		const alive = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
		const orphan = join(tmpdir(), `scrapejob-keys-${died.pid}-0rphan00`);
		const kept = join(tmpdir(), `scrapejob-keys-${alive.pid}-a1ive000`);
		// Dead too, but written a minute ago: maybe a live scan in a pid namespace this one cannot see.
		const recent = join(tmpdir(), `scrapejob-keys-${died.pid}-recent00`);
		const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
		try {
			for (const folder of [orphan, kept, recent]) {
				mkdirSync(folder, { recursive: true });
				writeFileSync(join(folder, "run-0.keys"), "12345678");
			}
			utimesSync(orphan, twoHoursAgo, twoHoursAgo);
			utimesSync(kept, twoHoursAgo, twoHoursAgo);
			const small = writeJob(dir, "small", "name: small\ntargets:\n  - https://shop.example/item/1\n");
			const { code } = await spawnCli(["validate", small], {}, dir).done;
			expect(code).toBe(0);
			expect(existsSync(orphan)).toBe(false);
			expect(existsSync(kept)).toBe(true);
			expect(existsSync(recent)).toBe(true);
		} finally {
			alive.kill();
			for (const folder of [orphan, kept, recent]) rmSync(folder, { recursive: true, force: true });
		}
	});
});
