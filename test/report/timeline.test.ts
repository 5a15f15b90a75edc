import { describe, expect, it } from "vitest";
import { createRecordAggregates, hostOf } from "../../src/report/record-aggregates.js";
import { pauseWindow } from "../../src/report/run-log-events.js";
import { createTimeline } from "../../src/report/timeline.js";
import { record } from "../helpers/records.js";

/** A deterministic pseudo-random sequence (the test must not depend on luck). */
function lcg(seed: number): () => number {
	let state = seed;
	return () => {
		state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
		return state / 2 ** 31;
	};
}

describe("report timeline", () => {
	it("counts in-flight fetches at each bucket start exactly, through every doubling of the buckets", () => {
		const random = lcg(7);
		const timeline = createTimeline(0, 40);
		const spans: Array<[number, number]> = [];
		for (let i = 0; i < 3000; i += 1) {
			const start = Math.floor(random() * 600_000);
			const finish = start + Math.floor(random() * 30_000);
			spans.push([start, finish]);
			timeline.span(start, finish);
			timeline.add("finished", finish, 1);
		}
		const snapshot = timeline.snapshot();
		expect(snapshot.finished.length).toBeLessThanOrEqual(80);
		expect(snapshot.bucket_ms).toBeGreaterThan(100);
		expect(snapshot.finished.reduce((a, b) => a + b, 0)).toBe(3000);
		snapshot.in_flight.forEach((level, index) => {
			const at = index * snapshot.bucket_ms;
			const expected = spans.filter(([start, finish]) => start <= at && at < finish).length;
			expect(level, `bucket ${index}`).toBe(expected);
		});
	});

	it("keeps a week-long run to a bounded number of points", () => {
		const timeline = createTimeline(0);
		for (let at = 0; at < 7 * 86_400_000; at += 60_000) timeline.add("finished", at, 1);
		const snapshot = timeline.snapshot();
		expect(snapshot.finished.length).toBeLessThanOrEqual(1200);
		expect(snapshot.finished.reduce((a, b) => a + b, 0)).toBe(7 * 24 * 60);
	});
});

describe("report aggregates", () => {
	it("gathers latency percentiles, fill rates, changes and failing hosts from records", () => {
		const aggregates = createRecordAggregates(Date.parse("2026-11-21T00:00:00.000Z"));
		for (let i = 0; i < 100; i += 1) {
			aggregates.add(
				record(`ok${i}`, {
					duration_ms: i < 90 ? 100 : 5000,
					data: { price: i % 4 === 0 ? null : 10, tags: i % 2 ? [] : ["a"] },
					change: i < 10 ? "changed" : "unchanged",
				}),
			);
		}
		for (let i = 0; i < 7; i += 1) {
			aggregates.add(
				record(`f${i}`, { status: "failed", url: `https://user:pw@Bad.Example:8443/x?${i}`, error: "http_503" }),
			);
		}
		aggregates.add(record("g", { status: "failed", url: "https://other.example/y" }));
		const latency = aggregates.latency();
		expect(latency.p50).toBeGreaterThanOrEqual(100);
		expect(latency.p50).toBeLessThan(130);
		expect(latency.p99).toBeGreaterThanOrEqual(5000);
		expect(latency.counts.reduce((a, b) => a + b, 0)).toBe(108);
		expect(aggregates.fields()).toEqual([
			{ name: "price", filled: 75, of: 100 },
			{ name: "tags", filled: 50, of: 100 },
		]);
		expect(aggregates.changes()).toEqual({ new: 0, changed: 10, unchanged: 90 });
		expect(aggregates.topFailingHosts()).toEqual([
			{ host: "bad.example:8443", failed: 7 },
			{ host: "other.example", failed: 1 },
		]);
	});

	it("reads hosts without credentials", () => {
		expect(hostOf("https://u:p@Example.com/a")).toBe("example.com");
		expect(hostOf("http://example.com?x=1")).toBe("example.com");
		expect(hostOf("http://example.com#top")).toBe("example.com");
	});

	it("reads pause windows from run.log lines and ignores everything else", () => {
		const line = JSON.stringify({
			time: "2026-11-21T00:00:10.000Z",
			event: "pause",
			reason: "rate_limited",
			pause_ms: 3000,
		});
		expect(pauseWindow(line)).toEqual({
			start_ms: Date.parse("2026-11-21T00:00:10.000Z"),
			end_ms: Date.parse("2026-11-21T00:00:13.000Z"),
			reason: "rate_limited",
		});
		expect(pauseWindow(JSON.stringify({ time: "2026-11-21T00:00:10.000Z", event: "retry" }))).toBeNull();
		expect(pauseWindow('{"event":"pause","time":"x","pause_ms":5}')).toBeNull();
		expect(pauseWindow("{torn")).toBeNull();
	});
});
