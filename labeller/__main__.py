from labeller.cli import main

main()
