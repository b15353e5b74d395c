"""wfexec types the real hiivmind-corpus workflows use and no hiivmind catalogue defines."""
