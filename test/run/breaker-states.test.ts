import { describe, expect, it } from "vitest";
import { createBreakers } from "../../src/run/economics/breaker.js";

/** The breaker's states (docs/behaviour.md, "Breakers"): closed → open → probe after cool_down → closed or open. */
describe("breaker states", () => {
	it("opens at trip, parks until cool_down, lets one probe through; a useful probe closes it, a useless one re-opens it", async () => {
		let now = 0;
		const breakers = createBreakers({ window: 4, trip: 3, coolDownMs: 1000, by: "domain" }, () => now);
		// Keyed by host; grouped by registrable domain once a charged fetch goes wrong (the public-suffix
		// list is loaded only then): another host of the domain shares its breaker.
		const key = breakers.keyOf("https://shop.example.co.uk/a");
		expect(key).toBe("shop.example.co.uk");
		const sibling = breakers.keyOf("https://www.example.co.uk/b");
		const useless = { id: "t", credits_used: 1, useful: false, useless_reason: "block_signature: x" };
		for (let index = 0; index < 3; index++) {
			expect(breakers.admit(key, 2, "t")).toBe("fetch");
			breakers.settle(key, useless, false);
		}
		expect(breakers.admit(key, 2, "t")).toBe("park");
		expect(breakers.admit(sibling, 2, "t")).toBe("park");
		now = 1000;
		expect(breakers.admit(key, 2, "t")).toBe("probe");
		// While the probe is in flight, the domain's other targets wait for its answer: a useless one parks them.
		const waiting = breakers.admit(key, 2, "t");
		expect(waiting).toBeInstanceOf(Promise);
		breakers.settle(key, useless, true);
		await expect(waiting).resolves.toBe("park");
		expect(breakers.open()).toMatchObject([{ domain: "example.co.uk", parked: 3, credits_saved: 6 }]);
		now = 2000;
		expect(breakers.admit(key, 2, "t")).toBe("probe");
		// A probe lost (no record): the first target waiting goes as the probe, the next waits on.
		const next = breakers.admit(key, 2, "t");
		const after = breakers.admit(key, 2, "t");
		breakers.probeLost(key, "t");
		await expect(next).resolves.toBe("probe");
		// A useful probe closes it: the target that waited is fetched.
		breakers.settle(key, { id: "t", credits_used: 1, useful: true }, true);
		await expect(after).resolves.toBe("fetch");
		expect(breakers.open()).toEqual([]);
		expect(breakers.admit(key, 2, "t")).toBe("fetch");
	});
});
