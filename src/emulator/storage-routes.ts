/**
 * Cloud-storage configs (docs/service.md, "Saved items", `/account/storage`): where results may be uploaded
 * (`storage_id`, `use_default_storage`). Credentials are kept but answered masked, as the service
 * keeps them encrypted; at most one config is the default. The emulator uploads nothing.
 */

import { invalid, notFound, ok, requireSomeField, type SavedAnswer, type SavedRequest } from "./saved-answers.js";
import { checkStorageBody } from "./saved-checks.js";
import { newId, type Params, type StorageConfig, type StorageType, storageView } from "./saved-items.js";

function makeDefault(request: SavedRequest, chosen: StorageConfig): void {
	for (const storage of request.ctx.saved.storage.values()) storage.is_default = storage === chosen;
}

export function answerStorage(request: SavedRequest): SavedAnswer {
	const { ctx, method, id, body } = request;
	const store = ctx.saved.storage;
	if (id === undefined) {
		if (method === "GET") return ok(200, { storage_configs: store.values().map(storageView) });
		const problems = checkStorageBody(body, false);
		if (problems.length > 0) return invalid(problems);
		const now = new Date(ctx.clock()).toISOString();
		const storage = store.add({
			id: newId("stor_"),
			name: (body.name as string).trim(),
			storage_type: body.storage_type as StorageType,
			config: body.config as Params,
			is_default: false,
			created_at: now,
			updated_at: now,
		});
		if (body.set_as_default === true) makeDefault(request, storage);
		return ok(201, { ...storageView(storage), message: "Storage config created successfully" });
	}
	const storage = store.get(id);
	if (!storage) return notFound("storage config", id);
	switch (method) {
		case "GET":
			return ok(200, storageView(storage));
		case "PUT": {
			const problems = [
				...requireSomeField(body, ["name", "storage_type", "config", "set_as_default"]),
				...checkStorageBody(body, true, storage.storage_type),
			];
			if (problems.length > 0) return invalid(problems);
			if (body.name !== undefined) storage.name = (body.name as string).trim();
			if (body.storage_type !== undefined) storage.storage_type = body.storage_type as StorageType;
			if (body.config !== undefined) storage.config = body.config as Params;
			if (body.set_as_default === true) makeDefault(request, storage);
			else if (body.set_as_default === false) storage.is_default = false;
			storage.updated_at = new Date(ctx.clock()).toISOString();
			return ok(200, { ...storageView(storage), message: "Storage config updated successfully" });
		}
		default:
			store.delete(storage.id);
			return ok(200, { id: storage.id, message: "Storage config deleted successfully" });
	}
}
