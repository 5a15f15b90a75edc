/**
 * Schedules (docs/service.md, "Saved items", `/account/schedule`): list (`active_only`), create, read, update,
 * delete, `/<id>/toggle` (pause or activate) and `/<id>/runs` (what ran, newest first). A schedule
 * runs a saved config; schedule-runner.ts does the running.
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
import { checkScheduleBody } from "./saved-checks.js";
import { newId, type Schedule } from "./saved-items.js";
import { armSchedule, runsOf } from "./schedule-runner.js";

export type ScheduleAction = "item" | "toggle" | "runs";

export function answerSchedules(request: SavedRequest, action: ScheduleAction): SavedAnswer {
	const { ctx, method, id, body, query } = request;
	const schedules = ctx.saved.schedules;
	if (id === undefined) {
		if (method === "GET") {
			const activeOnly = query.get("active_only") === "true";
			const page = paginate(
				schedules.values().filter((schedule) => !activeOnly || schedule.is_active),
				query,
			);
			return isAnswer(page) ? page : ok(200, { schedules: page.items, pagination: page.pagination });
		}
		const problems = checkScheduleBody(body, false, ctx.saved.configs);
		if (problems.length > 0) return invalid(problems);
		const now = new Date(ctx.clock()).toISOString();
		const schedule = schedules.add({
			id: newId("job_"),
			name: (body.name as string).trim(),
			config_id: body.config_id as string,
			interval_minutes: body.interval_minutes as number,
			start_time: typeof body.start_time === "string" ? body.start_time : null,
			stop_on_error: body.stop_on_error !== false,
			is_active: true,
			last_run: null,
			last_status: null,
			next_run: null,
			created_at: now,
			updated_at: now,
		});
		armSchedule(ctx, schedule);
		return ok(201, { ...schedule, message: "Schedule created successfully" });
	}
	const schedule = schedules.get(id);
	if (!schedule) return notFound("schedule", id);
	switch (action) {
		case "toggle":
			schedule.is_active = !schedule.is_active;
			schedule.updated_at = new Date(ctx.clock()).toISOString();
			armSchedule(ctx, schedule);
			return ok(200, {
				id: schedule.id,
				is_active: schedule.is_active,
				next_run: schedule.next_run,
				message: schedule.is_active ? "Schedule activated" : "Schedule paused",
			});
		case "runs": {
			const page = paginate([...runsOf(ctx, schedule.id)].map(asListed), query);
			if (isAnswer(page)) return page;
			return ok(200, { schedule_id: schedule.id, runs: page.items, pagination: page.pagination });
		}
		default:
			return answerItem(request, schedule);
	}
}

/** Runs are listed by start time (`created_at` for the pager). */
function asListed<T extends { readonly started_at: string }>(run: T): T & { readonly created_at: string } {
	return { ...run, created_at: run.started_at };
}

function answerItem(request: SavedRequest, schedule: Schedule): SavedAnswer {
	const { ctx, method, body } = request;
	switch (method) {
		case "GET":
			return ok(200, { ...schedule });
		case "PUT": {
			const fields = ["name", "config_id", "interval_minutes", "start_time", "stop_on_error"];
			const problems = [...requireSomeField(body, fields), ...checkScheduleBody(body, true, ctx.saved.configs)];
			if (problems.length > 0) return invalid(problems);
			if (body.name !== undefined) schedule.name = (body.name as string).trim();
			if (body.config_id !== undefined) schedule.config_id = body.config_id as string;
			if (body.interval_minutes !== undefined) schedule.interval_minutes = body.interval_minutes as number;
			if (body.start_time !== undefined) schedule.start_time = (body.start_time as string | null) ?? null;
			if (body.stop_on_error !== undefined) schedule.stop_on_error = body.stop_on_error as boolean;
			schedule.updated_at = new Date(ctx.clock()).toISOString();
			armSchedule(ctx, schedule);
			return ok(200, { ...schedule, message: "Schedule updated successfully" });
		}
		default:
			ctx.saved.schedules.delete(schedule.id);
			ctx.saved.runs.delete(schedule.id);
			ctx.scheduleTimers.clear(schedule.id);
			return ok(200, { id: schedule.id, message: "Schedule deleted successfully" });
	}
}
