package verbs

import "flag"

// reviewFindings runs the second adversarial review's findings: tests that
// fail on the code they were written against, skipped by default so that
// CI stays green until each is fixed (then its skip goes).
var reviewFindings = flag.Bool("review.findings", false, "run the second adversarial review's findings (tests that fail until fixed)")
