"""Generated backends (``lazygen.generated.<backend>``); produced by ``lazygen gen``."""
