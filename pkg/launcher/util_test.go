package launcher

import "os"

func mkdirs(dirs ...string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}
