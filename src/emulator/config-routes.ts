/**
 * Saved scraper configs (docs/service.md, "Saved items", `/account/configs`): list, create, read, update, delete.
 * A config is a set of realtime parameters a request names with `config_id`.
 */

import {
	invalid,
	isAnswer,
	notFound,
	ok,
	paginate,
	requireSomeField,
	type SavedAnswer,
	type SavedRequest,
} from "./saved-answers.js";
import { checkConfigBody } from "./saved-checks.js";
import { newId, type Params, type SavedConfig } from "./saved-items.js";

export function answerConfigs(request: SavedRequest): SavedAnswer {
	const { ctx, method, id, body } = request;
	const configs = ctx.saved.configs;
	if (id === undefined) {
		if (method === "GET") {
			const page = paginate(configs.values(), request.query);
			return isAnswer(page) ? page : ok(200, { configs: page.items, pagination: page.pagination });
		}
		const problems = checkConfigBody(body, false);
		if (problems.length > 0) return invalid(problems);
		const now = new Date(ctx.clock()).toISOString();
		const config = configs.add({
			id: newId("cfg_"),
			name: (body.name as string).trim(),
			config: body.config as Params,
			created_at: now,
			updated_at: now,
		});
		return ok(201, { ...config, message: "Scrape config created successfully" });
	}
	const config = configs.get(id);
	if (!config) return notFound("config", id);
	switch (method) {
		case "GET":
			return ok(200, { ...config });
		case "PUT": {
			const problems = [...requireSomeField(body, ["name", "config"]), ...checkConfigBody(body, true)];
			if (problems.length > 0) return invalid(problems);
			if (body.name !== undefined) config.name = (body.name as string).trim();
			if (body.config !== undefined) config.config = body.config as Params;
			config.updated_at = new Date(ctx.clock()).toISOString();
			return ok(200, { ...config, message: "Scrape config updated successfully" });
		}
		default:
			return deleteConfig(request, config);
	}
}

/** A config a schedule runs cannot go away under it: 409 names the schedule. */
function deleteConfig(request: SavedRequest, config: SavedConfig): SavedAnswer {
	const { ctx } = request;
	const user = ctx.saved.schedules.values().find((schedule) => schedule.config_id === config.id);
	if (user) {
		return {
			status: 409,
			body: {
				success: false,
				error: "Config in use",
				message: `Config ${config.id} is run by schedule ${user.id}; delete that schedule or point it at another config first`,
				timestamp: new Date().toISOString(),
			},
		};
	}
	ctx.saved.configs.delete(config.id);
	return ok(200, { id: config.id, message: "Scrape config deleted successfully" });
}
