/**
 * The practical ceiling: a bare undici pool of C workers, a few lines, no validation, no retries,
 * JSONL only. Each worker takes the next URL, POSTs `{url, mode: "request"}` to the realtime
 * endpoint, reads the body and appends one JSON line. Measures itself and reports over IPC.
 */
import { createReadStream, createWriteStream } from "node:fs";
import { createInterface } from "node:readline";
import { finished } from "node:stream/promises";
import { Pool } from "undici";
import { type ClientConfig, exitWithParent, readConfig, sendAndExit, startMeter } from "./protocol.js";

const config = readConfig<ClientConfig>();
exitWithParent();
if (!config.realtimeUrl || !config.scraperKey || !config.outFile) throw new Error("bare client: incomplete config");
const endpoint = new URL(config.realtimeUrl);
const headers = { "content-type": "application/json", "x-api-key": config.scraperKey };
const limit = config.limit ?? Number.POSITIVE_INFINITY;

const meter = startMeter();
const pool = new Pool(endpoint.origin, { connections: config.concurrency, pipelining: 1 });
const out = createWriteStream(config.outFile);
const lines = createInterface({ input: createReadStream(config.urlsFile), crlfDelay: Number.POSITIVE_INFINITY });
const source = lines[Symbol.asyncIterator]();
let taken = 0;
let written = 0;

// Workers take lines one at a time, in order, through a chain of promises.
let turn: Promise<unknown> = Promise.resolve();
function nextUrl(): Promise<string | undefined> {
	const next = turn.then(async () => {
		if (taken >= limit) return undefined;
		const line = await source.next();
		if (line.done) return undefined;
		taken += 1;
		return line.value;
	});
	turn = next.catch(() => undefined);
	return next;
}

async function worker(): Promise<void> {
	for (let url = await nextUrl(); url !== undefined; url = await nextUrl()) {
		const response = await pool.request({
			path: endpoint.pathname,
			method: "POST",
			headers,
			body: JSON.stringify({ url, mode: "request" }),
		});
		const body = await response.body.text();
		written += 1;
		if (!out.write(`${JSON.stringify({ url, status: response.statusCode, bytes: body.length })}\n`)) {
			await new Promise<void>((resolve) => out.once("drain", () => resolve()));
		}
	}
}

await Promise.all(Array.from({ length: config.concurrency }, () => worker()));
out.end();
await finished(out);
lines.close();
const measured = meter.stop();
await pool.close();
sendAndExit({ type: "report", ...measured, startupCpuMs: 0, results: written, exitCode: 0 });
