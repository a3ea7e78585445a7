package core

// ReadPlanFile is readPlanFile: the engine's own read of a plan file, through an os.Root.
func ReadPlanFile(plansDir, sessionDir, name string) []byte {
	return readPlanFile(plansDir, sessionDir, name)
}
