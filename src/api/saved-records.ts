import { z } from "zod";

/*
 * Zod schemas of what the account keeps on the scraper side (`/api/v1/account/…`, docs/service.md, "Saved items"):
 * saved configs, schemes, storage configs and schedules. Only `id` is required: the docs show few
 * fields, so everything else is read when present and kept as sent (loose objects).
 */

const item = { id: z.string().min(1), name: z.string().optional(), created_at: z.string().optional() };

export const savedConfigSchema = z.looseObject({ ...item, config: z.record(z.string(), z.unknown()).optional() });
export type SavedConfig = z.infer<typeof savedConfigSchema>;

export const savedSchemeSchema = z.looseObject({
	...item,
	config: z.record(z.string(), z.unknown()).optional(),
	status: z.string().optional(),
});
export type SavedScheme = z.infer<typeof savedSchemeSchema>;

export const storageConfigSchema = z.looseObject({
	...item,
	storage_type: z.string().optional(),
	config: z.record(z.string(), z.unknown()).optional(),
	is_default: z.boolean().optional(),
});
export type StorageConfig = z.infer<typeof storageConfigSchema>;

export const scheduleSchema = z.looseObject({
	...item,
	config_id: z.string().optional(),
	interval_minutes: z.number().optional(),
	is_active: z.boolean().optional(),
	last_run: z.string().nullable().optional(),
	last_status: z.string().nullable().optional(),
	next_run: z.string().nullable().optional(),
});
export type Schedule = z.infer<typeof scheduleSchema>;

/** The list pager the docs show for schedules (`pagination: {page, per_page, total}`). */
export const paginationSchema = z.looseObject({
	page: z.number().optional(),
	per_page: z.number().optional(),
	total: z.number().optional(),
});
