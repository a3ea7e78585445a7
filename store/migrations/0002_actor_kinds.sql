-- Audit actors get a kind: "person:<id>", "rule:<name>", "agent" or "system". Before,
-- people's ids shared the column with "agent", "system" and "auto" (auto-approve); those
-- three keep their meaning, everything else was a person's id.
UPDATE plan_events SET actor = CASE
    WHEN actor IN ('', 'agent', 'system') THEN actor
    WHEN actor = 'auto' THEN 'rule:auto'
    ELSE 'person:' || actor
END;
