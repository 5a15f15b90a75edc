import { describe, expect, test } from "vitest";
import { type Answer, savedCall, scrapePost, useDemoSite, useEmulator, waitFor } from "./helpers.js";

function validationErrors(answer: Answer): string[] {
	return (answer.json.details as { validation_errors: string[] }).validation_errors;
}

const PRICE_SCHEME = [
	{ label: "name", type: "content", selector: "h1" },
	{ label: "price", type: "content", selector: ".price" },
];

describe("/account/schemes", () => {
	test("a scheme saved as given is ready; read, status, list, rename, delete", async () => {
		const emulator = await useEmulator();
		const created = await savedCall(emulator, "POST", "/schemes", {
			name: "prices",
			config: { extract_scheme: PRICE_SCHEME },
		});
		expect(created.status).toBe(201);
		const id = created.json.id as string;
		expect(id).toMatch(/^sch_[0-9a-f]{16}$/);
		expect(created.json).toMatchObject({ success: true, name: "prices", status: "ready", test_result: null });
		const status = await savedCall(emulator, "GET", `/schemes/${id}/status`);
		expect(status.status).toBe(200);
		expect(status.json).toMatchObject({ success: true, scheme_id: id, status: "ready" });
		const list = await savedCall(emulator, "GET", "/schemes");
		expect((list.json.schemes as Array<{ id: string }>).map((scheme) => scheme.id)).toEqual([id]);
		expect(list.json.pagination).toEqual({ page: 1, per_page: 20, total: 1 });
		const renamed = await savedCall(emulator, "PUT", `/schemes/${id}`, { name: "prices v2" });
		expect(renamed.status).toBe(200);
		expect(renamed.json).toMatchObject({ name: "prices v2", config: { extract_scheme: PRICE_SCHEME } });
		expect((await savedCall(emulator, "DELETE", `/schemes/${id}`)).status).toBe(200);
		expect((await savedCall(emulator, "GET", `/schemes/${id}/status`)).status).toBe(404);
		expect(emulator.ledger.totalCharged()).toBe(0);
	});

	test("422 for missing fields, bad rules and the creation rules of test and fix", async () => {
		const emulator = await useEmulator();
		const missing = await savedCall(emulator, "POST", "/schemes", {});
		expect(missing.status).toBe(422);
		expect(validationErrors(missing)).toEqual(["name: field required", "config: field required"]);
		const noScheme = await savedCall(emulator, "POST", "/schemes", { name: "a", config: {}, fix: true });
		expect(validationErrors(noScheme)).toEqual([
			"fix: requires test: true",
			"extract_prompt: required when fix is true",
			"config.url: url is required (test and fix scrape it)",
		]);
		const badRules = await savedCall(emulator, "POST", "/schemes", {
			name: "a",
			config: {
				extract_scheme: [
					{ label: "img", type: "attribute", selector: "img" },
					{ type: "count", selector: "li", regex: "x" },
					{ label: "cards", type: "nest", selector: ".card" },
					{ label: "what", type: "guess" },
				],
			},
		});
		expect(validationErrors(badRules)).toEqual([
			"config.extract_scheme[0].attribute: required for type attribute",
			"config.extract_scheme[1].label: field required",
			"config.extract_scheme[1]: give one of selector, xpath, regex, not selector and regex",
			"config.extract_scheme[2].fields: required for type nest",
			"config.extract_scheme[3].type: must be one of content, attribute, exists, count, nest",
			"config.extract_scheme[3]: one of selector, xpath, regex is required",
		]);
		expect((await savedCall(emulator, "GET", "/schemes")).json.pagination).toMatchObject({ total: 0 });
	});

	test("test: true scrapes config.url at the scraper rate and saves only a scheme that extracts data", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const url = `${site.url}/product/7`;
		const passed = await savedCall(emulator, "POST", "/schemes", {
			name: "prices",
			test: true,
			config: { url, mode: "request", extract_scheme: PRICE_SCHEME },
		});
		expect(passed.status).toBe(201);
		expect(passed.headers.get("x-credits-used")).toBe("2");
		expect(passed.json).toMatchObject({
			status: "ready",
			credits_used: 2,
			test_result: { passed: true, url, status_code: 200, extracted_data: { name: "Product 7" } },
		});
		expect((passed.json.test_result as { extracted_data: { price: string } }).extracted_data.price).toMatch(/^\$/);
		const failed = await savedCall(emulator, "POST", "/schemes", {
			name: "nothing",
			test: true,
			config: { url, mode: "request", extract_scheme: [{ label: "x", selector: ".missing" }] },
		});
		expect(failed.status).toBe(422);
		expect(failed.json).toMatchObject({ success: false, error: "Scheme test failed", credits_used: 2 });
		expect(failed.json.message).toContain("extracted no data");
		// Both tests fetched the page (2 credits each); only the passing scheme was saved.
		expect(emulator.ledger.totalCharged()).toBe(4);
		expect((await savedCall(emulator, "GET", "/schemes")).json.pagination).toMatchObject({ total: 1 });
	});

	test("fix: true repairs a scheme for 30 credits more; a fix that finds nothing is refunded", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const fixed = await savedCall(emulator, "POST", "/schemes", {
			name: "fixed",
			test: true,
			fix: true,
			extract_prompt: "the product name and description",
			config: { url: `${site.url}/product/2`, mode: "request", extract_scheme: [{ label: "x", selector: ".missing" }] },
		});
		expect(fixed.status).toBe(201);
		expect(fixed.json.credits_used).toBe(32);
		expect((fixed.json.generated_scheme as Array<{ label: string }>).map((rule) => rule.label)).toEqual([
			"title",
			"heading",
			"description",
		]);
		expect(emulator.ledger.totalCharged()).toBe(32);
		const empty = await savedCall(emulator, "POST", "/schemes", {
			name: "empty",
			test: true,
			fix: true,
			extract_prompt: "anything",
			config: { url: `${site.url}/robots.txt`, mode: "request" },
		});
		expect(empty.status).toBe(422);
		expect(empty.json.message).toContain("refunded");
		expect(emulator.ledger.totalCharged()).toBe(34);
		expect(emulator.credits()).toBe(10_000 - 34);
	});

	test("async: 202 at once, status processing until the test ends, then ready", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator({ scenario: { latency_ms: 100 } });
		const submitted = await savedCall(emulator, "POST", "/schemes", {
			name: "later",
			test: true,
			async: true,
			config: { url: `${site.url}/product/1`, mode: "request", extract_scheme: PRICE_SCHEME },
		});
		expect(submitted.status).toBe(202);
		const id = submitted.json.scheme_id as string;
		expect(submitted.json).toMatchObject({ status: "processing", check_url: `/api/v1/account/schemes/${id}/status` });
		const first = await savedCall(emulator, "GET", `/schemes/${id}/status`);
		expect(first.json.status).toBe("processing");
		// A scheme under test cannot be used yet.
		const early = await scrapePost(emulator, { url: `${site.url}/product/1`, scheme_id: id });
		expect(early.status).toBe(422);
		expect(validationErrors(early)).toEqual([`scheme_id: scheme ${id} is processing, not ready`]);
		const done = await waitFor(async () => {
			const answer = await savedCall(emulator, "GET", `/schemes/${id}/status`);
			return answer.json.status === "processing" ? null : answer;
		});
		expect(done.json).toMatchObject({ status: "ready", test_result: { passed: true } });
		expect(emulator.ledger.totalCharged()).toBe(2);
	});

	test("realtime with scheme_id extracts with the saved scheme; an unknown one is a 422", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const created = await savedCall(emulator, "POST", "/schemes", {
			name: "prices",
			config: { extract_scheme: PRICE_SCHEME },
		});
		const answer = await scrapePost(emulator, {
			url: `${site.url}/product/5`,
			mode: "request",
			delivery: "json",
			scheme_id: created.json.id,
		});
		expect(answer.status).toBe(200);
		expect((answer.json.extracted_data as { name: string }).name).toBe("Product 5");
		const unknown = await scrapePost(emulator, { url: `${site.url}/product/5`, scheme_id: "sch_nope" });
		expect(unknown.status).toBe(422);
		expect(validationErrors(unknown)).toEqual(["scheme_id: no saved scheme sch_nope on this account"]);
	});
});
