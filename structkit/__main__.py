from structkit.cli import main

main()
