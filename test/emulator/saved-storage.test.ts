import { describe, expect, test } from "vitest";
import { type Answer, savedCall, scrapePost, useDemoSite, useEmulator } from "./helpers.js";

function validationErrors(answer: Answer): string[] {
	return (answer.json.details as { validation_errors: string[] }).validation_errors;
}

const S3 = {
	bucket: "results",
	region: "eu-central-1",
	access_key: "AKIAEXAMPLEACCESS",
	secret_key: "very-secret-key-123",
	endpoint_url: "https://s3.example.com",
	path_prefix: "{{domain}}/{{date}}/{{task_id}}",
};

describe("/account/storage", () => {
	test("create, list, read, update, delete; credentials are never answered", async () => {
		const emulator = await useEmulator();
		const created = await savedCall(emulator, "POST", "/storage", {
			name: "results bucket",
			storage_type: "s3_compatible",
			config: S3,
			set_as_default: true,
		});
		expect(created.status).toBe(201);
		const id = created.json.id as string;
		expect(id).toMatch(/^stor_[0-9a-f]{16}$/);
		expect(created.json).toMatchObject({
			success: true,
			name: "results bucket",
			storage_type: "s3_compatible",
			is_default: true,
			config: { bucket: "results", access_key: "********", secret_key: "********", path_prefix: S3.path_prefix },
			message: "Storage config created successfully",
		});
		const second = await savedCall(emulator, "POST", "/storage", {
			name: "gcs",
			storage_type: "gcs",
			config: { bucket: "other", credentials_json: '{"private_key":"x"}' },
			set_as_default: true,
		});
		const list = await savedCall(emulator, "GET", "/storage");
		expect(list.status).toBe(200);
		const listed = list.json.storage_configs as Array<{ id: string; is_default: boolean }>;
		// One default at a time: the second took it over.
		expect(listed.map((storage) => [storage.id, storage.is_default])).toEqual([
			[id, false],
			[second.json.id, true],
		]);
		for (const secret of [S3.secret_key, S3.access_key, "private_key"]) expect(list.text).not.toContain(secret);
		const updated = await savedCall(emulator, "PUT", `/storage/${id}`, { name: "renamed", set_as_default: true });
		expect(updated.json).toMatchObject({ name: "renamed", is_default: true });
		const read = await savedCall(emulator, "GET", `/storage/${id}`);
		expect(read.json).toMatchObject({ id, name: "renamed", config: { secret_key: "********" } });
		expect((await savedCall(emulator, "DELETE", `/storage/${id}`)).status).toBe(200);
		expect((await savedCall(emulator, "GET", `/storage/${id}`)).status).toBe(404);
	});

	test("422 for missing fields, an unknown type and an S3 config without its keys", async () => {
		const emulator = await useEmulator();
		const missing = await savedCall(emulator, "POST", "/storage", {});
		expect(missing.status).toBe(422);
		expect(validationErrors(missing)).toEqual([
			"name: field required",
			"storage_type: field required (s3_compatible, gcs, azure_blob)",
			"config: field required",
		]);
		const bad = await savedCall(emulator, "POST", "/storage", {
			name: "x",
			storage_type: "dropbox",
			config: {},
			set_as_default: "yes",
		});
		expect(validationErrors(bad)).toEqual([
			"set_as_default: must be true or false",
			"storage_type: must be one of s3_compatible, gcs, azure_blob",
			"config: must be an object of the provider's settings",
		]);
		const s3 = await savedCall(emulator, "POST", "/storage", {
			name: "x",
			storage_type: "s3_compatible",
			config: { bucket: "b", endpoint_url: "s3.example.com" },
		});
		expect(validationErrors(s3)).toEqual([
			"config.access_key: required for s3_compatible",
			"config.secret_key: required for s3_compatible",
			"config.endpoint_url: invalid URL format",
		]);
		expect((await savedCall(emulator, "GET", "/storage")).json.storage_configs).toEqual([]);
	});

	test("realtime checks storage_id and use_default_storage against the account", async () => {
		const site = await useDemoSite();
		const emulator = await useEmulator();
		const url = `${site.url}/product/1`;
		const noDefault = await scrapePost(emulator, { url, mode: "request", use_default_storage: true });
		expect(noDefault.status).toBe(422);
		expect(validationErrors(noDefault)).toEqual(["use_default_storage: the account has no default storage config"]);
		const unknown = await scrapePost(emulator, { url, mode: "request", storage_id: "stor_nope" });
		expect(validationErrors(unknown)).toEqual(["storage_id: no storage config stor_nope on this account"]);
		const created = await savedCall(emulator, "POST", "/storage", {
			name: "s",
			storage_type: "s3_compatible",
			config: S3,
			set_as_default: true,
		});
		expect((await scrapePost(emulator, { url, mode: "request", use_default_storage: true })).status).toBe(200);
		expect((await scrapePost(emulator, { url, mode: "request", storage_id: created.json.id })).status).toBe(200);
		expect(emulator.ledger.totalCharged()).toBe(4);
	});
});
