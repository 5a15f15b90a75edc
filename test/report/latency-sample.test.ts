import { describe, expect, it } from "vitest";
import { createLatencySample } from "../../src/report/latency-sample.js";

describe("the report's latency sample", () => {
	it("gives exact nearest-rank percentiles while every duration fits", () => {
		const sample = createLatencySample(1000);
		for (const ms of [137, 151, 90, 120, 400, 137, 99, 101, 150, 160]) sample.add(ms);
		expect(sample.exact).toBe(true);
		expect(sample.quantiles([0.5, 0.95, 0.99])).toEqual([137, 400, 400]);
		expect(createLatencySample().quantiles([0.5])).toEqual([null]);
	});

	it("past its capacity keeps a uniform sample: percentiles within a few per cent, memory bounded", () => {
		const sample = createLatencySample(10_000);
		// Rising durations (a run slowing down): keeping only the first 10,000 would say p50 = 5000.
		const total = 200_000;
		for (let ms = 1; ms <= total; ms += 1) sample.add(ms);
		expect(sample.count).toBe(total);
		expect(sample.exact).toBe(false);
		const [p50, p95, p99] = sample.quantiles([0.5, 0.95, 0.99]) as number[];
		expect(Math.abs(p50! - 100_000) / 100_000).toBeLessThan(0.03);
		expect(Math.abs(p95! - 190_000) / 190_000).toBeLessThan(0.01);
		expect(Math.abs(p99! - 198_000) / 198_000).toBeLessThan(0.01);
	});
});
