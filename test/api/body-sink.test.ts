import { createHash } from "node:crypto";
import { readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { type BodySink, BodySinkError, BodyTooLargeError, RequestAbortedError } from "../../src/api/index.js";
import { type BodySpill, send } from "../../src/api/transport.js";
import { dispatcher, rejectionOf, useRawServer } from "./helpers.js";

/**
 * `api/transport` hands a large body to the caller's sink (docs/architecture.md: the HTTP
 * layer knows nothing of files): it hashes, counts and passes chunks on, and a sink it opened always
 * hears `end()` or `abort()`. The files are the output layer's (test/output/body-file.test.ts).
 */

/** A sink that keeps what it is told, in memory. */
function recordingSink(name = "kept-by-the-test") {
	const calls: string[] = [];
	const chunks: Buffer[] = [];
	const sink: BodySink = {
		write(chunk) {
			calls.push("write");
			chunks.push(Buffer.from(chunk));
		},
		end() {
			calls.push("end");
			return name;
		},
		abort() {
			calls.push("abort");
		},
	};
	return { sink, calls, chunks, body: () => Buffer.concat(chunks) };
}

function spillTo(sink: BodySink | null, afterBytes = 64 * 1024): BodySpill & { opened: () => number } {
	let opened = 0;
	return {
		afterBytes,
		open() {
			opened += 1;
			return sink;
		},
		opened: () => opened,
	};
}

const sha1 = (body: Buffer) => createHash("sha1").update(body).digest("hex");
const partialFiles = (dir: string) => readdirSync(dir).filter((name) => name.startsWith(".partial-"));

function get(url: string, spill: BodySpill, extra: { maxBodyBytes?: number; signal?: AbortSignal } = {}) {
	return send(dispatcher, {
		method: "GET",
		url,
		headers: {},
		timeoutMs: 10_000,
		endpoint: "GET /page",
		spill,
		...extra,
	});
}

describe("transport: a large body goes to the caller's sink", () => {
	it("passes every chunk on as it arrives, hashed and counted, and writes no file of its own", async () => {
		const recorded = recordingSink();
		const first = Buffer.alloc(256 * 1024, "a");
		const second = Buffer.alloc(200 * 1024 + 7, "b");
		const server = await useRawServer((_req, res) => {
			res.writeHead(200, { "content-type": "text/html" });
			res.write(first);
			// The rest only once the sink holds the first part: a transport that waits for the whole body never gets it.
			const wait = setInterval(() => {
				if (recorded.body().length < first.length) return;
				clearInterval(wait);
				res.end(second);
			}, 5);
			res.on("close", () => clearInterval(wait));
		});
		const before = { cwd: partialFiles(process.cwd()), tmp: partialFiles(tmpdir()) };
		const spill = spillTo(recorded.sink);
		const response = await get(`${server.url}/big`, spill);
		const page = Buffer.concat([first, second]);
		expect(response.body.length).toBe(0);
		expect(response.spilled).toEqual({ stored: "kept-by-the-test", bytes: page.length, sha1: sha1(page) });
		expect(recorded.body().equals(page)).toBe(true);
		expect(recorded.calls.at(-1)).toBe("end");
		expect(recorded.calls).not.toContain("abort");
		expect(spill.opened()).toBe(1);
		// Nothing on disk from the api layer (and `src/api/` imports no `node:fs`: test/architecture.test.ts).
		expect({ cwd: partialFiles(process.cwd()), tmp: partialFiles(tmpdir()) }).toEqual(before);
	});

	it("counts and hashes a body whose sink is null (content: none), keeping nothing", async () => {
		const page = Buffer.alloc(300 * 1024, "z");
		const server = await useRawServer((_req, res) => {
			res.writeHead(200, { "content-type": "text/html" }).end(page);
		});
		const response = await get(`${server.url}/none`, spillTo(null));
		expect(response.body.length).toBe(0);
		expect(response.spilled).toEqual({ stored: null, bytes: page.length, sha1: sha1(page) });
	});

	it("never opens the sink for a small body, a JSON body or a target's error", async () => {
		const spill = spillTo(recordingSink().sink, 1024);
		const server = await useRawServer((req, res) => {
			if (req.url === "/small") res.writeHead(200, { "content-type": "text/html" }).end("<p>small</p>");
			else if (req.url === "/json")
				res.writeHead(200, { "content-type": "application/json" }).end(`"${"j".repeat(4096)}"`);
			else res.writeHead(404, { "content-type": "text/html", "x-target-status": "404" }).end("n".repeat(4096));
		});
		for (const path of ["/small", "/json", "/missing"]) {
			const response = await get(`${server.url}${path}`, spill);
			expect(response.spilled, path).toBeUndefined();
			expect(response.body.length, path).toBeGreaterThan(0);
		}
		expect(spill.opened()).toBe(0);
	});
});

describe("transport: a body that does not finish is aborted in its sink", () => {
	it("past max_body_mb: BodyTooLargeError, and the sink is aborted, never ended", async () => {
		const recorded = recordingSink();
		const server = await useRawServer((_req, res) => {
			res.writeHead(200, { "content-type": "text/html" });
			const chunk = Buffer.alloc(64 * 1024, "x");
			let sent = 0;
			const pump = () => {
				while (sent < 64 && res.write(chunk)) sent += 1;
				if (sent >= 64) res.end();
				else res.once("drain", pump);
			};
			pump();
			res.on("error", () => {});
		});
		await rejectionOf(
			get(`${server.url}/huge`, spillTo(recorded.sink), { maxBodyBytes: 1024 * 1024 }),
			BodyTooLargeError,
		);
		expect(recorded.calls).toContain("write");
		expect(recorded.calls.filter((call) => call !== "write")).toEqual(["abort"]);
	});

	it("the run's signal mid-body: RequestAbortedError, and the sink is aborted", async () => {
		const recorded = recordingSink();
		const controller = new AbortController();
		const server = await useRawServer((_req, res) => {
			res.writeHead(200, { "content-type": "text/html" });
			// Half a page, then nothing: the stop comes while the body is on the wire.
			res.write(Buffer.alloc(256 * 1024, "h"));
		});
		const answer = get(`${server.url}/slow`, spillTo(recorded.sink), { signal: controller.signal });
		await expect.poll(() => recorded.chunks.length, { interval: 5, timeout: 5000 }).toBeGreaterThan(0);
		controller.abort(new Error("stop"));
		await rejectionOf(answer, RequestAbortedError);
		expect(recorded.calls.filter((call) => call !== "write")).toEqual(["abort"]);
	});

	it("a sink whose write fails: BodySinkError carrying the sink's error, and the sink is aborted", async () => {
		const recorded = recordingSink();
		const diskFull = Object.assign(new Error("no space"), { code: "ENOSPC" });
		let writes = 0;
		const failing: BodySink = {
			...recorded.sink,
			write(chunk) {
				writes += 1;
				if (writes === 2) throw diskFull;
				recorded.sink.write(chunk);
			},
		};
		const server = await useRawServer((_req, res) => {
			res.writeHead(200, { "content-type": "text/html" });
			const chunk = Buffer.alloc(64 * 1024, "w");
			let sent = 0;
			const pump = () => {
				while (sent < 32 && res.write(chunk)) sent += 1;
				if (sent >= 32) res.end();
				else res.once("drain", pump);
			};
			pump();
			res.on("error", () => {});
		});
		const error = await rejectionOf(get(`${server.url}/full`, spillTo(failing, 1)), BodySinkError);
		expect(error.cause).toBe(diskFull);
		expect(error.code).toBe("SCRAPEJOB_OUTPUT");
		expect(recorded.calls.filter((call) => call !== "write")).toEqual(["abort"]);
	});

	it("a sink whose end fails: BodySinkError, and the sink is aborted (its file removed)", async () => {
		const recorded = recordingSink();
		const failing: BodySink = {
			...recorded.sink,
			end() {
				throw new Error("close failed");
			},
		};
		const server = await useRawServer((_req, res) => {
			res.writeHead(200, { "content-type": "text/html" }).end(Buffer.alloc(128 * 1024, "e"));
		});
		await rejectionOf(get(`${server.url}/end`, spillTo(failing)), BodySinkError);
		expect(recorded.calls.filter((call) => call !== "write")).toEqual(["abort"]);
	});

	it("a sink that cannot open: BodySinkError, not a network failure", async () => {
		const server = await useRawServer((_req, res) => {
			res.writeHead(200, { "content-type": "text/html" }).end(Buffer.alloc(128 * 1024, "o"));
		});
		const spill: BodySpill = {
			afterBytes: 1024,
			open() {
				throw new Error("read-only folder");
			},
		};
		const error = await rejectionOf(get(`${server.url}/open`, spill), BodySinkError);
		expect((error.cause as Error).message).toBe("read-only folder");
	});
});
