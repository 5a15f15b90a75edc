/**
 * Every shell example of the guides (docs/guides/*.md) says whether it runs: the line before its
 * ```sh fence is `<!-- shell: runnable -->` or `<!-- shell: not runnable: <why> -->`. The runnable ones
 * run here, as a user pastes them, against the emulator: one `sh -e` per block, `npx scrapejob` being
 * this checkout's built CLI, in a folder holding a copy of the repository's `jobs/`. The emulator's
 * documented ports (8700, 8701) are moved to a free pair, so a run beside other tests cannot collide.
 * A block that starts the emulator in the background also runs with its port taken: it must stop with
 * the emulator's error, not wait for it forever.
 */
import { cpSync, readdirSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { tempDir } from "./helpers/job-files.js";
import { ROOT, readDoc } from "./helpers/manual.js";
import { assertBuilt, endedWithin, runPrintedCommand } from "./helpers/spawn-cli.js";

interface ShellBlock {
	readonly where: string;
	readonly marker: string | null;
	readonly text: string;
}

function shellBlocks(): ShellBlock[] {
	const blocks: ShellBlock[] = [];
	const guides = readdirSync(join(ROOT, "docs", "guides")).filter((name) => name.endsWith(".md"));
	for (const name of guides.sort()) {
		const file = `docs/guides/${name}`;
		const text = readDoc(file);
		for (const match of text.matchAll(/^```sh\n([\s\S]*?)^```$/gm)) {
			const before = text.slice(0, match.index).split("\n");
			const previous = before[before.length - 2] ?? "";
			blocks.push({
				where: `${file}:${before.length}`,
				marker: /^<!-- shell: (.+) -->$/.exec(previous)?.[1] ?? null,
				text: match[1] ?? "",
			});
		}
	}
	return blocks;
}

/** A free port whose next port is free too (the emulator's demo site takes port + 1). */
async function freePortPair(): Promise<number> {
	const listen = (port: number) =>
		new Promise<number | null>((resolve) => {
			const server = createServer();
			server.once("error", () => resolve(null));
			server.listen(port, "127.0.0.1", () => {
				const { port: bound } = server.address() as { port: number };
				server.close(() => resolve(bound));
			});
		});
	for (let tries = 0; tries < 20; tries += 1) {
		const port = await listen(0);
		if (port !== null && port < 65535 && (await listen(port + 1)) !== null) return port;
	}
	throw new Error("no free pair of ports");
}

const blocks = shellBlocks();
const runnable = blocks.filter((block) => block.marker === "runnable");
const startingEmulator = runnable.filter((block) => /scrapejob emulator .*&$/m.test(block.text));

describe("the guides' shell examples", () => {
	beforeAll(() => assertBuilt());

	it("each says whether it runs, and why not when it does not", () => {
		expect(blocks.length).toBeGreaterThan(0);
		const unmarked = blocks.filter(
			(block) => block.marker !== "runnable" && !/^not runnable: \S.{9,}/.test(block.marker ?? ""),
		);
		expect(unmarked.map((block) => `${block.where}: ${block.marker ?? "no <!-- shell: … --> line before it"}`)).toEqual(
			[],
		);
		expect(runnable.length).toBeGreaterThan(0);
	});

	it.each(runnable.map((block) => [block.where, block] as const))(
		"%s runs as printed against the emulator",
		async (_where, block) => {
			const dir = tempDir("scrapejob-guide-");
			cpSync(join(ROOT, "jobs"), join(dir, "jobs"), { recursive: true });
			const port = await freePortPair();
			const script = block.text.replaceAll("8700", String(port)).replaceAll("8701", String(port + 1));
			const { done } = runPrintedCommand(`set -e\n${script}`, { HOME: dir }, dir);
			const result = await done;
			expect(result.code, `${block.where}\n${result.stdout.slice(-2000)}\n${result.stderr.slice(-2000)}`).toBe(0);
			expect(result.stdout.length).toBeGreaterThan(0);
		},
		120_000,
	);

	it.each(startingEmulator.map((block) => [block.where, block] as const))(
		"%s stops with the emulator's error when its port is taken",
		async (_where, block) => {
			const dir = tempDir("scrapejob-guide-");
			cpSync(join(ROOT, "jobs"), join(dir, "jobs"), { recursive: true });
			const port = await freePortPair();
			const taken = createServer();
			await new Promise<void>((resolve) => taken.listen(port, "127.0.0.1", resolve));
			try {
				const script = block.text.replaceAll("8700", String(port)).replaceAll("8701", String(port + 1));
				// A recipe that waits for emulator.json without watching the emulator never ends here.
				const result = await endedWithin(runPrintedCommand(`set -e\n${script}`, { HOME: dir }, dir), 30_000);
				expect(result, `${block.where} still waits for the emulator after it exited`).not.toBeNull();
				expect(result?.code).not.toBe(0);
				expect(result?.stderr).toContain(`port ${port} or ${port + 1} (demo site) on 127.0.0.1 is in use`);
			} finally {
				await new Promise((resolve) => taken.close(resolve));
			}
		},
		60_000,
	);
});
