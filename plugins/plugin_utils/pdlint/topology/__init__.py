"""The topology: host variables turned into instances, engines and deployments, with model facts."""
