"""Built-in baselines and test servers: the executor and its miss analysis, fake and hostile servers."""
