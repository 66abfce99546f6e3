"""raf: compose agents into workflows, where every workflow is itself an agent."""
