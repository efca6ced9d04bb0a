-- PLACEHOLDER, delete on merge: this version number belongs to a migration
-- of a branch developed in parallel (0006 the run owner lease, 0007 the
-- tool process group in intents). It keeps versions 1..8 free of gaps on
-- the seams-types branch, whose own migration is 0008.
SELECT 1;
