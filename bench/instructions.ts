/**
 * `npm run bench:instructions [-- --targets=N]`: instructions a target costs the runner and the bare
 * undici pool, counted by valgrind (`callgrind`), not timed. This machine's speed drifts by ±15 %
 * between minutes, so wall and CPU time resolve only large effects; an instruction count repeats
 * closely as long as the server answers at once (it runs here, on the core valgrind leaves free). Each client runs at N and 2N targets against a server that answers at once (a constant
 * realtime answer): the difference over N is the cost of a target, with start-up, module loading and
 * JIT warm-up taken out (N = 20,000 by default: at 10,000 some of the runner's code is still warming
 * up, ~20 % more a target). The runner gets its concurrency from an emulator's account endpoint
 * (C = 50, as the bare pool's). Needs valgrind (`apt-get install -y valgrind`); takes ~15 minutes.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { startEmulator } from "../src/emulator/index.js";

const CONCURRENCY = 50;
// Compiled to node_modules/.cache/scrapejob-bench/bench/: the repository is four folders up.
const root = join(import.meta.dirname, "..", "..", "..", "..");
const targetsArg = process.argv.find((arg) => arg.startsWith("--targets="));
const N = targetsArg ? Number(targetsArg.slice("--targets=".length)) : 20_000;
if (!Number.isInteger(N) || N < 1000) {
	process.stderr.write(`bench:instructions: --targets must be a whole number of at least 1000 (got ${targetsArg})\n`);
	process.exit(2);
}

if (spawnSync("valgrind", ["--version"]).status !== 0) {
	process.stderr.write("bench:instructions needs valgrind: apt-get install -y valgrind\n");
	process.exit(2);
}

const PAGE = Buffer.from(
	`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Page</title></head><body><main><h1>Page</h1>${"<p>Some text of a generic page, enough to count as content.</p>".repeat(5)}</main></body></html>\n`,
);
const ANSWER = Buffer.concat([
	Buffer.from(
		"HTTP/1.1 200 OK\r\nx-credits-used: 2\r\nx-credits-remaining: 999000000\r\nx-ratelimit-limit: 50\r\n" +
			`x-ratelimit-remaining: 50\r\nx-mode-used: request\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: ${PAGE.length}\r\n` +
			"connection: keep-alive\r\nkeep-alive: timeout=5\r\n\r\n",
	),
	PAGE,
]);

/** Answers every request at once with the same realtime answer: the client's work is all there is. */
function startCannedServer(): Promise<Server> {
	const server = createServer((socket) => {
		socket.setNoDelay(true);
		let pending = "";
		socket.on("data", (chunk) => {
			pending += chunk.toString("latin1");
			for (;;) {
				const end = pending.indexOf("\r\n\r\n");
				if (end < 0) return;
				const length = Number(/content-length: *(\d+)/i.exec(pending.slice(0, end))?.[1] ?? 0);
				if (pending.length < end + 4 + length) return;
				pending = pending.slice(end + 4 + length);
				socket.write(ANSWER);
			}
		});
		socket.on("error", () => undefined);
	});
	return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/** Run `node args` under callgrind; the instructions it executed. */
function countInstructions(args: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
	return new Promise((resolve, reject) => {
		const child = spawn("valgrind", ["--tool=callgrind", "--callgrind-out-file=/dev/null", process.execPath, ...args], {
			env,
			stdio: ["ignore", "ignore", "pipe"],
		});
		let stderr = "";
		child.stderr.on("data", (chunk: Buffer) => {
			stderr = (stderr + chunk.toString()).slice(-4000);
		});
		child.on("close", (code) => {
			const collected = /Collected : (\d+)/.exec(stderr);
			if (code !== 0 || !collected) reject(new Error(`node ${args.join(" ")} exited ${code}:\n${stderr}`));
			else resolve(Number(collected[1]));
		});
	});
}

const dir = mkdtempSync(join(tmpdir(), "scrapejob-instructions-"));
const server = await startCannedServer();
const emulator = await startEmulator({ scenario: { concurrency: CONCURRENCY, credits: 1e9 }, ledger: false });
try {
	const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
	for (const count of [N, 2 * N]) {
		const urls = Array.from({ length: count }, (_, index) => `http://site.test/page/${index + 1}`).join("\n");
		writeFileSync(join(dir, `urls-${count}.txt`), `${urls}\n`);
		writeFileSync(
			join(dir, `job-${count}.yaml`),
			`name: bench\nconcurrency: ${CONCURRENCY}\ndefaults:\n  mode: request\nsources:\n  - file: urls-${count}.txt\noutput:\n  formats: [jsonl]\n  content: none\n`,
		);
	}
	// The bench's bare pool (client-bare.ts) without its IPC and its 50 ms memory samples (under valgrind
	// those would add instructions with time, not with targets): workers, Pool.request, body.text(), a JSON line.
	writeFileSync(
		join(dir, "bare.mjs"),
		`import { createReadStream, createWriteStream } from "node:fs";
import { createInterface } from "node:readline";
import { Pool } from ${JSON.stringify(pathToFileURL(join(root, "node_modules", "undici", "index.js")).href)};
const [urlsFile, outFile, origin] = process.argv.slice(2);
const headers = { "content-type": "application/json", "x-api-key": "key" };
const pool = new Pool(origin, { connections: ${CONCURRENCY}, pipelining: 1 });
const out = createWriteStream(outFile);
const source = createInterface({ input: createReadStream(urlsFile), crlfDelay: Infinity })[Symbol.asyncIterator]();
let turn = Promise.resolve();
const nextUrl = () => { const next = turn.then(async () => { const line = await source.next(); return line.done ? undefined : line.value; }); turn = next.catch(() => undefined); return next; };
await Promise.all(Array.from({ length: ${CONCURRENCY} }, async () => {
	for (let url = await nextUrl(); url !== undefined; url = await nextUrl()) {
		const response = await pool.request({ path: "/api/v1/scraper/realtime", method: "POST", headers, body: JSON.stringify({ url, mode: "request" }) });
		const body = await response.body.text();
		if (!out.write(JSON.stringify({ url, status: response.statusCode, bytes: body.length }) + "\\n")) await new Promise((resolve) => out.once("drain", resolve));
	}
}));
out.end();
await pool.close();
`,
	);
	const runnerEnv: NodeJS.ProcessEnv = {
		PATH: process.env.PATH,
		SCRAPEJOB_ACCOUNT_KEY: emulator.accountKey,
		SCRAPEJOB_API_URL: emulator.apiUrl,
		SCRAPEJOB_SCRAPER_URL: `${origin}/api/v1`,
		NO_COLOR: "1",
	};
	const bin = join(root, "dist", "cli", "bin.js");
	const clients = {
		bare: (count: number) =>
			countInstructions(
				[join(dir, "bare.mjs"), join(dir, `urls-${count}.txt`), join(dir, `bare-${count}.jsonl`), origin],
				{
					PATH: process.env.PATH,
				},
			),
		runner: (count: number) =>
			countInstructions(
				[bin, "run", join(dir, `job-${count}.yaml`), "--out", join(dir, `out-${count}`), "--quiet"],
				runnerEnv,
			),
	};
	process.stderr.write(`bench:instructions: ${N} and ${2 * N} targets per client under callgrind (minutes)…\n`);
	const perTarget: Record<string, number> = {};
	const lines: string[] = [];
	for (const [name, run] of Object.entries(clients)) {
		// One at a time: the count depends on the server answering at once (a client that finds fewer
		// answers ready per turn of its event loop runs more turns per target), and two clients under
		// valgrind plus the server do not fit on two cores — run in pairs, the bare pool measured 154 k
		// and 201 k a target.
		const small = await run(N);
		const large = await run(2 * N);
		perTarget[name] = (large - small) / N;
		lines.push(
			`| ${name.padEnd(6)} | ${(small / 1e9).toFixed(2).padStart(8)} G | ${(large / 1e9).toFixed(2).padStart(8)} G | ${(perTarget[name] / 1000).toFixed(1).padStart(8)} k |`,
		);
	}
	process.stdout.write(
		`| client | at ${N} | at ${2 * N} | per target |\n|:--|--:|--:|--:|\n${lines.join("\n")}\n` +
			`runner / bare per target: ${((perTarget.runner ?? 0) / (perTarget.bare ?? 1)).toFixed(2)}×\n`,
	);
} finally {
	server.close();
	await emulator.close();
	rmSync(dir, { recursive: true, force: true });
}
