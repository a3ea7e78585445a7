-- Reserved: version 7 belongs to a change made in parallel with 0008. This file keeps the
-- version sequence without gaps until that change lands, and is deleted when it does.
SELECT 1;
