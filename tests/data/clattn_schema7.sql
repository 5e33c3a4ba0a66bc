-- tests/data/clattn_schema7.sql - a tuning database as clattn's schema 7
-- left it (libraries before the application id): steps 1 to 7 of
-- host/src/db/schema.c, one profile and one tuning row, user_version 7 and
-- application_id 0.  test_tunedb and test_faults build old files from it.
BEGIN;
-- 1
CREATE TABLE profiles ( fingerprint TEXT PRIMARY KEY NOT NULL, source INTEGER NOT NULL, name TEXT NOT NULL, vendor TEXT NOT NULL, platform TEXT NOT NULL, driver TEXT NOT NULL, arch TEXT NOT NULL, is_cpu INTEGER NOT NULL, compute_units INTEGER NOT NULL, clock_mhz INTEGER NOT NULL, wave_width INTEGER NOT NULL, simds_per_cu INTEGER NOT NULL, global_mem_bytes INTEGER NOT NULL, local_mem_bytes INTEGER NOT NULL, max_wg INTEGER NOT NULL, has_fp16 INTEGER NOT NULL, has_subgroups INTEGER NOT NULL, bw_read_gbs REAL NOT NULL, bw_copy_gbs REAL NOT NULL, bw_triad_gbs REAL NOT NULL, fp32_gflops REAL NOT NULL, fp16_gflops REAL NOT NULL, local_gbs REAL NOT NULL, h2d_gbs REAL NOT NULL, d2h_gbs REAL NOT NULL, launch_us REAL NOT NULL, launch_pipelined_us REAL NOT NULL, note TEXT NOT NULL, updated TEXT NOT NULL, library_version TEXT NOT NULL);
-- 2
ALTER TABLE profiles ADD COLUMN cache_bytes INTEGER NOT NULL DEFAULT 0;
-- 3
CREATE TABLE model_checks ( id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL, call TEXT NOT NULL, bound TEXT NOT NULL, predicted_s REAL NOT NULL, measured_s REAL NOT NULL, gbs REAL NOT NULL, gflops REAL NOT NULL, roofline_fraction REAL NOT NULL, updated TEXT NOT NULL, library_version TEXT NOT NULL);
CREATE INDEX model_checks_fp ON model_checks (fingerprint, call);
-- 4
CREATE TABLE tuning ( id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL, device TEXT NOT NULL, vendor TEXT NOT NULL, arch TEXT NOT NULL, driver TEXT NOT NULL, kernel TEXT NOT NULL, shape_class TEXT NOT NULL, params TEXT NOT NULL, status TEXT NOT NULL, median_s REAL NOT NULL, spread REAL NOT NULL, predicted_s REAL NOT NULL, max_err REAL NOT NULL, strategy TEXT NOT NULL, message TEXT NOT NULL, library_version TEXT NOT NULL, updated TEXT NOT NULL, UNIQUE (fingerprint, kernel, shape_class, params));
CREATE INDEX tuning_class ON tuning (kernel, shape_class);
-- 5
ALTER TABLE profiles ADD COLUMN probe_method INTEGER NOT NULL DEFAULT 1;
-- 6
ALTER TABLE tuning ADD COLUMN tune_method INTEGER NOT NULL DEFAULT 1;
-- 7
CREATE INDEX tuning_device ON tuning (vendor, arch);
INSERT INTO profiles (fingerprint, source, name, vendor, platform, driver,
 arch, is_cpu, compute_units, clock_mhz, wave_width, simds_per_cu,
 global_mem_bytes, local_mem_bytes, max_wg, has_fp16, has_subgroups,
 bw_read_gbs, bw_copy_gbs, bw_triad_gbs, fp32_gflops, fp16_gflops, local_gbs,
 h2d_gbs, d2h_gbs, launch_us, launch_pipelined_us, note, updated,
 library_version, cache_bytes, probe_method)
VALUES ('oldfp', 1, 'Old GPU', 'OldVendor', 'Old platform', '1.0', 'gfx9', 0,
 60, 1500, 64, 4, 17179869184, 65536, 1024, 1, 1, 900.5, 850, 860, 12000,
 24000, 5000, 12, 12, 5, 2.25, '', '2025-01-01T00:00:00Z', '0.9.0', 4194304,
 1);
INSERT INTO tuning (fingerprint, device, vendor, arch, driver, kernel,
 shape_class, params, status, median_s, spread, predicted_s, max_err,
 strategy, message, library_version, updated, tune_method)
VALUES ('oldfp', 'Old GPU', 'OldVendor', 'gfx9', '1.0', 'prefill',
 'f32 k32 v32 g1 bh2 n64 m64 c1', 'variant=1 rows=4 keys=16 wg=0 splits=0',
 'ok', 0.00125, 0.01, 0, 1e-7, 'exhaustive', '', '0.9.0',
 '2025-01-01T00:00:00Z', 1);
PRAGMA user_version = 7;
COMMIT;
