// Baseline: what the compiler costs with nothing in the translation unit.
int main() { return 0; }
