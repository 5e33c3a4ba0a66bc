-- tests/data/clattn_schema3.sql - a tuning database as clattn's schema 3
-- left it (libraries before the application id): steps 1 to 3 of
-- host/src/db/schema.c, one profile, user_version 3 and application_id 0.
-- test_faults migrates it through five steps.
BEGIN;
-- 1
CREATE TABLE profiles ( fingerprint TEXT PRIMARY KEY NOT NULL, source INTEGER NOT NULL, name TEXT NOT NULL, vendor TEXT NOT NULL, platform TEXT NOT NULL, driver TEXT NOT NULL, arch TEXT NOT NULL, is_cpu INTEGER NOT NULL, compute_units INTEGER NOT NULL, clock_mhz INTEGER NOT NULL, wave_width INTEGER NOT NULL, simds_per_cu INTEGER NOT NULL, global_mem_bytes INTEGER NOT NULL, local_mem_bytes INTEGER NOT NULL, max_wg INTEGER NOT NULL, has_fp16 INTEGER NOT NULL, has_subgroups INTEGER NOT NULL, bw_read_gbs REAL NOT NULL, bw_copy_gbs REAL NOT NULL, bw_triad_gbs REAL NOT NULL, fp32_gflops REAL NOT NULL, fp16_gflops REAL NOT NULL, local_gbs REAL NOT NULL, h2d_gbs REAL NOT NULL, d2h_gbs REAL NOT NULL, launch_us REAL NOT NULL, launch_pipelined_us REAL NOT NULL, note TEXT NOT NULL, updated TEXT NOT NULL, library_version TEXT NOT NULL);
-- 2
ALTER TABLE profiles ADD COLUMN cache_bytes INTEGER NOT NULL DEFAULT 0;
-- 3
CREATE TABLE model_checks ( id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL, call TEXT NOT NULL, bound TEXT NOT NULL, predicted_s REAL NOT NULL, measured_s REAL NOT NULL, gbs REAL NOT NULL, gflops REAL NOT NULL, roofline_fraction REAL NOT NULL, updated TEXT NOT NULL, library_version TEXT NOT NULL);
CREATE INDEX model_checks_fp ON model_checks (fingerprint, call);
INSERT INTO profiles (fingerprint, source, name, vendor, platform, driver,
 arch, is_cpu, compute_units, clock_mhz, wave_width, simds_per_cu,
 global_mem_bytes, local_mem_bytes, max_wg, has_fp16, has_subgroups,
 bw_read_gbs, bw_copy_gbs, bw_triad_gbs, fp32_gflops, fp16_gflops, local_gbs,
 h2d_gbs, d2h_gbs, launch_us, launch_pipelined_us, note, updated,
 library_version, cache_bytes)
VALUES ('oldfp', 1, 'Old GPU', 'OldVendor', 'Old platform', '1.0', 'gfx9', 0,
 60, 1500, 64, 4, 17179869184, 65536, 1024, 1, 1, 900.5, 850, 860, 12000,
 24000, 5000, 12, 12, 5, 2.25, '', '2025-01-01T00:00:00Z', '0.9.0', 4194304);
PRAGMA user_version = 3;
COMMIT;
