import { describe, expect, test } from "vitest";
import { createAccountClient, createScraperClient } from "../../src/api/index.js";
import { UsageError } from "../../src/common/index.js";
import { accountClientFor, dispatcher, scraperClientFor, useEmulator } from "./helpers.js";

const FACTORIES = [
	["account", (baseUrl: string) => createAccountClient({ accountKey: "k-account-1", baseUrl, dispatcher })],
	["scraper", (baseUrl: string) => createScraperClient({ scraperKey: "k-scraper-1", baseUrl, dispatcher })],
] as const;

function refusal(create: () => unknown): UsageError {
	try {
		create();
	} catch (error) {
		expect(error).toBeInstanceOf(UsageError);
		return error as UsageError;
	}
	throw new Error("expected the address to be refused");
}

describe.each(FACTORIES)("%s client base addresses", (_name, create) => {
	test("plain http:// to a non-loopback host is refused (the service is HTTPS-only)", () => {
		for (const address of ["http://api.evomi.com", "http://10.0.0.5:8080", "http://128.0.0.1"]) {
			expect(refusal(() => create(address)).message).toContain("HTTPS-only");
		}
	});

	test("an address without its scheme (the emulator's host:port as typed) is refused saying so", () => {
		for (const address of ["127.0.0.1:8700", "localhost:8700", "api.evomi.com"]) {
			expect(refusal(() => create(address)).message).toContain(
				`needs its scheme: https://… (or http:// on loopback, as the emulator's http://127.0.0.1:8700); got "${address}"`,
			);
		}
	});

	test("an address without its scheme that carries credentials is refused without showing them", () => {
		for (const address of ["user:S3cretPW@127.0.0.1:8700", "S3cretPW@api.evomi.com/v1"]) {
			const message = refusal(() => create(address)).message;
			expect(message).toContain("needs its scheme");
			expect(message).toContain("***@");
			expect(message).not.toContain("S3cretPW");
		}
	});

	test("http:// on loopback (the emulator) and https:// anywhere are allowed", () => {
		for (const address of [
			"http://127.0.0.1:1",
			"http://127.8.9.10:2",
			"http://localhost:3",
			"http://[::1]:4",
			"https://api.evomi.com",
			"https://scrape.evomi.com/api/v1/",
		]) {
			expect(() => create(address)).not.toThrow();
		}
	});

	test("credentials or a query string in the address are refused without echoing them", () => {
		for (const address of [
			"https://user:s3cret-pass@api.evomi.com",
			"https://api.evomi.com/?apikey=s3cret-key",
			"https://scrape.evomi.com/api/v1?api_key=s3cret-key",
		]) {
			const error = refusal(() => create(address));
			expect(error.message).toContain("must not carry credentials or a query string");
			expect(error.message).not.toContain("s3cret");
		}
	});

	test("other schemes and non-URLs are refused", () => {
		expect(refusal(() => create("ftp://api.evomi.com")).message).toContain("must use https://");
		expect(refusal(() => create("https://")).message).toContain("is not a valid URL");
	});
});

describe("addresses as given by the emulator", () => {
	test("a trailing slash on either base address still reaches the right paths", async () => {
		const emulator = await useEmulator();
		const account = accountClientFor({ apiUrl: `${emulator.apiUrl}/`, accountKey: emulator.accountKey });
		expect((await account.scraperAccess()).has_access).toBe(true);
		const scraper = scraperClientFor({ scraperUrl: `${emulator.scraperUrl}/`, scraperKey: emulator.scraperKey });
		expect((await scraper.health()).ok).toBe(true);
		expect(emulator.ledger.entries.map((entry) => entry.path)).toEqual(["/public/scraper", "/api/v1/scraper/health"]);
	});

	test("the endpoint_url that /public/scraper returns is a usable scraper base address", async () => {
		const emulator = await useEmulator();
		const access = await accountClientFor(emulator).scraperAccess();
		const scraper = scraperClientFor({ scraperUrl: access.endpoint_url, scraperKey: access.api_key ?? "" });
		expect((await scraper.health()).ok).toBe(true);
	});
});
