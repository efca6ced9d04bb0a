-- Version 6 is reserved for the run owner lease, developed on another
-- branch; this placeholder keeps the versions gapless until it lands, and
-- is replaced by it on merge.
SELECT 1;
